/*
 * engine.h -- the storage engine's one public header.
 *
 * An ordered key-value store: binary keys compared with memcmp (shorter key
 * first on a common prefix), keys of 1..ENG_MAX_KEY bytes, values of
 * 0..ENG_MAX_VALUE bytes (large values live in overflow pages).
 *
 * Everything else under engine/ is internal.  The engine knows nothing of
 * faults/, oracle/ or stress/; what they need from it is here:
 *   - the status codes and the corruption report (with its callback),
 *   - the I/O hook interface (eng_io_hooks) through which a fault library
 *     sees and alters every read, write, sync and metadata operation,
 *   - the cache debug hook (eng_debug_frame_bytes) for in-memory bit flips.
 *
 * Threading: one handle may be used from many threads.  Writers (put,
 * delete) are serialized inside the engine; readers (get, iterators,
 * verify) run concurrently with them and with each other, synchronized by
 * page latches, never by a tree-wide lock.
 *
 * Contract for every call: it returns an eng_status; 0 (ENG_OK) is success.
 * A call that returns ENG_CORRUPTION has also delivered at least one
 * eng_corruption report to the callback (if one is set) and remembers the
 * last one for eng_last_corruption().  No call ever returns bytes that
 * failed a check as data.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENG_MAX_KEY   1024u
#define ENG_MAX_VALUE (64u << 20) /* 64 MiB: overflow chains, no hard limit below */

/* One status enum for the whole engine.  OS errors are translated once, at
 * the syscall / io_uring completion boundary (see engine/io.c). */
typedef enum eng_status {
    ENG_OK = 0,
    ENG_NOTFOUND,   /* key absent; not an error */
    ENG_CORRUPTION, /* bytes failed a check: a report was delivered */
    ENG_IOERR,      /* read/write/sync failed (EIO, short I/O that cannot be completed) */
    ENG_NOSPACE,    /* ENOSPC or EDQUOT */
    ENG_INVALID,    /* bad argument or option; nothing was changed */
    ENG_BUSY,       /* the database is locked by another handle, or every
                     * cache frame stayed pinned for seconds (cache far too small) */
    ENG_NOMEM,
    ENG_READONLY, /* write on a handle opened read-only */
    ENG_POISONED, /* an earlier write or sync failed; reopen to recover.
                     * Reads fail too: the kernel may have dropped pages, so
                     * a page read back could be older than acknowledged */
    ENG_NOTSUP,   /* the operation is not supported by this build or file */
    ENG_STATUS_COUNT
} eng_status;

/* Stable lower-case name of a status ("ok", "corruption", ...). */
const char *eng_strerror(int status);

/* The planted bug this library was built with (tests/mutants.txt: a test
 * build with one ENG_BROKEN_<NAME> switch), or NULL for the real engine.
 * Tools print it so a mutant's results are never read as the engine's. */
const char *eng_planted_bug(void);

/* ---- corruption reports --------------------------------------------- */

/* Which check noticed the problem.  Names (eng_layer_name) are stable and
 * appear in tool output and stress reports. */
typedef enum eng_layer {
    ENG_LAYER_PAGE_CHECKSUM = 0, /* "page_checksum": page checksum mismatch */
    ENG_LAYER_ZERO_PAGE,         /* "zero_page": all-zero page below the high-water mark */
    ENG_LAYER_PAGE_HEADER,       /* "page_header": header fields out of range */
    ENG_LAYER_STRUCTURE,         /* "structure": slots, cells, order, tree shape */
    ENG_LAYER_OVERFLOW,          /* "overflow": overflow chain broken */
    ENG_LAYER_CONTROL,           /* "control": control file */
    ENG_LAYER_WAL,               /* "wal_record": WAL record checksum or framing */
    ENG_LAYER_KV_PROTECTION,     /* "kv_protection": per key-value code in the pool */
    ENG_LAYER_VERSION,           /* "version": version header, hint bits or commit log */
    ENG_LAYER_HINT_STATUS,       /* "hint_status": with per-KV codes, a leaf's hint
                                  * disagrees with the transaction status read
                                  * from the commit log (two flips in a nibble in
                                  * the cache, or a commit-log page left old) */
    ENG_LAYER_COUNT
} eng_layer;

const char *eng_layer_name(int layer);

typedef struct eng_corruption {
    int layer;         /* eng_layer */
    char file[64];     /* relative to the database dir: "data", "control", ... */
    int64_t block;     /* page number, or -1 */
    int64_t offset;    /* byte offset in the file (or in the page for structure), or -1 */
    int32_t entry;     /* slot / entry index within the page, or -1; for a WAL
                        * record: how many blocks past its first it spans */
    uint64_t expected; /* e.g. stored checksum, expected block */
    uint64_t found;    /* e.g. computed checksum, found value */
    char detail[160];  /* one human-readable line, no newline */
} eng_corruption;

/* Called for every corruption report as it happens, from the thread that
 * noticed it.  Must not call back into the engine. */
typedef void (*eng_corruption_fn)(void *ctx, const eng_corruption *report);

/* Format a report as one line: "corruption: layer=... file=... block=N ...". */
int eng_corruption_format(const eng_corruption *r, char *buf, size_t cap);

/* ---- I/O hooks: the fault library's window into the engine ------------- */
/* (docs/architecture.md, Parts) */

typedef enum eng_io_kind {
    ENG_IO_READ = 0,
    ENG_IO_WRITE,
    ENG_IO_SYNC,   /* fsync / fdatasync of a file */
    ENG_IO_CREATE, /* create (open O_CREAT) a file */
    ENG_IO_RENAME,
    ENG_IO_UNLINK,
    ENG_IO_TRUNCATE,
    ENG_IO_DIRSYNC, /* fsync of a directory */
    ENG_IO_KIND_COUNT
} eng_io_kind;

/* What the engine is about to do, or just did.  A hook called "before" may
 * change the fields marked (mutable) to inject a fault:
 *   buf     (mutable, writes) the bytes about to be written: flip bits;
 *   offset  (mutable, writes) redirect the write elsewhere (misdirected);
 *   len     (mutable, reads and writes) shorten it (short I/O, torn write);
 *   skip    (mutable) 1 = do not issue the operation, report it as done
 *           (a lost write or a sync that silently does nothing).
 * A "before" hook returns 0 to proceed or a negative errno (-EIO,
 * -ENOSPC ...) to fail the operation without issuing it.
 * An "after" hook sees the result (bytes done, or negative errno) and, for
 * reads, the bytes read (buf, mutable: in-flight corruption after the read
 * completes); it may replace the result with a negative errno. */
typedef struct eng_io_op {
    int kind;          /* eng_io_kind */
    int file_id;       /* stable small id of the file within this database */
    const char *path;  /* path as opened (absolute or relative to cwd) */
    const char *path2; /* rename target, else NULL */
    void *buf;
    uint64_t offset;
    size_t len;
    int skip;
    int64_t result; /* after: bytes transferred or -errno */
    /* after, reads and writes: bytes of the range from its start that were
     * handed to the OS, in one transfer or several.  A write is not
     * atomic: one that failed with issued > 0 may have left any mix of
     * old and new bytes in [offset, offset + issued), a page torn as a
     * crash tears it.  0 when it failed before anything was issued. */
    uint64_t issued;
    /* A short count, for callers that return one (the fault door's read
     * and write calls; engine/io.c's loop finishes every range and leaves
     * it 0): before, 1 = the call may return a short count; a hook that
     * cuts len as a kernel's short transfer sets 2, and the call then
     * returns the bytes moved instead of reporting the range complete
     * (a len cut with 1 is a torn write, reported complete: IO3). */
    int short_count;
} eng_io_op;

typedef struct eng_io_hooks {
    void *ctx;
    int (*before)(void *ctx, eng_io_op *op);
    void (*after)(void *ctx, eng_io_op *op);
} eng_io_hooks;

/* ---- options ----------------------------------------------------------- */

typedef enum eng_io_backend {
    ENG_IO_URING = 0, /* default: liburing */
    ENG_IO_PSYNC,     /* pread/pwrite/fsync */
} eng_io_backend;

typedef enum eng_sync_mode {
    ENG_SYNC_COMMIT = 0, /* fsync the log before acknowledging each write (default) */
    ENG_SYNC_GROUP,      /* log in order under the writer lock, fsync outside it:
                          * one fsync acknowledges every write it covers */
    ENG_SYNC_OFF,        /* acknowledge at once; durable at the next sync,
                          * checkpoint or write-back that flushes the log */
} eng_sync_mode;

typedef enum eng_wal_compression {
    ENG_WAL_COMPRESSION_NONE = 0,
    ENG_WAL_COMPRESSION_ZSTD, /* full-page images compressed with zstd */
} eng_wal_compression;

/* The largest first_xid: well below the 2^30 ids the status copy holds
 * (txn.c) and the 16 million the commit log of 4 KiB pages can name
 * (format.h), so a database made with it has millions of ids left. */
#define ENG_FIRST_XID_MAX (1ull << 23)

typedef struct eng_options {
    /* Creation-time (stored in the control file; ignored when opening an
     * existing database, whose stored values win). */
    uint32_t page_size;        /* 4096, 8192 (default) or 16384 */
    int data_checksums;        /* 1 (default) or 0 */
    uint64_t wal_segment_size; /* power of two >= 64 KiB; default 16 MiB */
    uint64_t first_xid;        /* the first transaction id: 1 (default) up to
                                * ENG_FIRST_XID_MAX.  A database that starts
                                * further on shows in a few commits what a
                                * long history would (the commit log's later
                                * sectors and pages; PostgreSQL's tests set
                                * the next id with pg_resetwal -x) */

    /* Durability (open-time). */
    int sync_mode;                  /* eng_sync_mode */
    int full_page_writes;           /* default 1: image of a page on its first
                                 * change after each checkpoint */
    int wal_compression;            /* eng_wal_compression */
    uint64_t checkpoint_wal_bytes;  /* checkpoint after this much log; default
                                    * 64 MiB; 0 = only explicit checkpoints */
    size_t wal_buffer_size;         /* default 1 MiB */
    const char *archive_dir;        /* finished segments copied here before they
                                 * are removed; NULL = no archiving */
    int wal_log_hints;              /* default 0: 1 = hint-bit changes reach the
                                 * WAL too (a compact record of the page's
                                 * hint area at write-back; an image with
                                 * hint_fpi), for tools that diff pages by WAL */
    int hint_fpi;                   /* default 0: hint bits live in the page's
                                 * first 512-byte sector, which a torn write
                                 * keeps or loses whole, so a hint-only write
                                 * needs no WAL.  1 = PostgreSQL's rule: with
                                 * data_checksums or wal_log_hints, the first
                                 * hint-only write of a page after a checkpoint
                                 * logs a full-page image (for measuring) */
    uint64_t vacuum_freeze_min_age; /* default 50,000,000 transactions:
                                 * vacuum freezes versions whose writer is
                                 * older than this below the oldest snapshot */

    /* Open-time. */
    size_t cache_size;                  /* buffer pool bytes; default 64 MiB; at least 16 pages are used */
    int block_protection_bytes_per_key; /* 0 (default), 1, 2, 4 or 8: a code of
                             * that many bytes per key-value of every cached
                             * page (and 8 bytes over each page's header and
                             * slot array), computed as the page enters the
                             * pool, checked wherever the engine reads,
                             * compares, copies or writes back an entry; a
                             * mismatch is a kv_protection CORRUPTION report.
                             * Nothing of it is stored on disk: it may change
                             * from one open to the next */
    int kv_lazy_leaves;                 /* with the above: a leaf read for a
                             * reader may stay uncoded until its next use, its
                             * page checksum proving it meanwhile (checksums
                             * on).  0 (default): the pool chooses, lazy while
                             * most such leaves leave the pool unused (a small
                             * cache); 1: always; -1: never (coded at load).
                             * The guarantees are the same either way */
    int io_backend;                     /* eng_io_backend */
    int create_if_missing;              /* default 1 */
    int error_if_exists;                /* default 0 */
    int read_only;                      /* default 0.  1: the open writes
                             * nothing in the directory: every file is
                             * opened O_RDONLY, LOCK is neither created nor
                             * written, control is not rewritten, no log is
                             * opened for appending, nothing is synced,
                             * removed or created (no CREATING cleanup, no
                             * archive directory), no hint bits are set,
                             * and close writes nothing.  Locking: a shared
                             * flock on LOCK when LOCK can be opened for
                             * reading (read-only handles run together; a
                             * read-write handle and a read-only one refuse
                             * each other with ENG_BUSY), none when it
                             * cannot (absent, unreadable): then a writer
                             * is not kept out.  Recovery replays the log
                             * into the cache only (never written back), so
                             * the handle shows the recovered state; a
                             * replay that needs more cache than
                             * cache_size fails the open with ENG_READONLY
                             * (open read-write, or with a larger cache, to
                             * recover).  Writes, sync, checkpoint and
                             * vacuum return ENG_READONLY */
    eng_corruption_fn on_corruption;
    void *on_corruption_ctx;
    const eng_io_hooks *io_hooks; /* may be NULL; must outlive the handle */
} eng_options;

void eng_options_init(eng_options *o);

/* ---- the store --------------------------------------------------------- */

typedef struct eng_db eng_db;

/* Open or create the database in directory DIR (created if missing and
 * create_if_missing).  Takes an exclusive lock on DIR/LOCK: a second open,
 * in this process or another, gets ENG_BUSY (a read_only open takes a
 * shared one or none: see read_only).  On failure *out is NULL and
 * nothing on disk was changed unless the database was being created. */
int eng_open(const char *dir, const eng_options *opts, eng_db **out);

/* Write back every dirty page, sync, update the control file, release the
 * lock and free the handle.  The handle is freed even on error. */
int eng_close(eng_db *db);

/* Make every write so far durable: write and fsync the log up to its end
 * (pages follow at checkpoints; the log is what makes a write durable). */
int eng_sync(eng_db *db);

/* Caller-owned growable buffer for values. */
typedef struct eng_buf {
    void *data;
    size_t len;
    size_t cap;
} eng_buf;
void eng_buf_free(eng_buf *b);

/* Writes.  Each write is a batch, and each batch is a transaction with a
 * commit sequence number (1, 2, ... in commit order; the sequence is also
 * the transaction id its versions carry), returned in *seq when SEQ is not
 * NULL.  One writer commits at a time; readers never block it.  A batch is
 * atomic across crashes: after recovery it is wholly present or absent (a
 * batch that had not committed at the crash is aborted by recovery).
 * When a write returns ENG_OK its sequence is durable per sync_mode.  When
 * it fails, either the batch was aborted (eng_poisoned() is 0: none of it
 * is or will ever be visible, the handle goes on) or the failure left it in
 * doubt (eng_poisoned() is 1: after reopen it is wholly present or absent,
 * like a write cut by a crash).  Aborted batches consume their sequence.
 * ENG_POISONED from a write means it was refused whole (an earlier failure
 * poisoned the handle; nothing of it will ever be visible); a batch that
 * committed and then failed its fsync returns the fsync's error. */
typedef enum eng_op_kind { ENG_OP_PUT = 1, ENG_OP_DELETE = 2 } eng_op_kind;
typedef struct eng_op {
    int kind;
    const void *key;
    size_t klen;
    const void *val; /* puts */
    size_t vlen;
} eng_op;

#define ENG_MAX_BATCH_OPS 65536u

int eng_write(eng_db *db, const eng_op *ops, size_t n, uint64_t *seq);
int eng_put(eng_db *db, const void *key, size_t klen, const void *val, size_t vlen, uint64_t *seq);
/* ENG_NOTFOUND if absent (the delete is still logged and gets a sequence). */
int eng_delete(eng_db *db, const void *key, size_t klen, uint64_t *seq);
int eng_get(eng_db *db, const void *key, size_t klen, eng_buf *val);

/* 1 once a failure left the handle poisoned (every later write, sync and
 * read fails with ENG_POISONED; reopen to recover). */
int eng_poisoned(eng_db *db);

/* ---- snapshots and vacuum ---------------------------------------------- */

/* A snapshot sees exactly the batches committed before it was acquired
 * (sequence <= eng_snapshot_seq), however long it is held and whatever is
 * written or vacuumed meanwhile: vacuum keeps every version an acquired
 * snapshot can see.  Release every snapshot before eng_close. */
typedef struct eng_snapshot eng_snapshot;
int eng_snapshot_acquire(eng_db *db, eng_snapshot **out);
uint64_t eng_snapshot_seq(const eng_snapshot *s);
void eng_snapshot_release(eng_db *db, eng_snapshot *s);
/* eng_get as of snapshot S (NULL: the latest commit). */
int eng_get_at(eng_db *db, const eng_snapshot *s, const void *key, size_t klen, eng_buf *val);

/* Vacuum: one pass over every leaf (a writer: it waits for the write lock,
 * readers go on).  Removes versions no snapshot can see (deleted or
 * replaced before the oldest snapshot) and versions of aborted batches,
 * frees their overflow pages, sets hint bits on what stays (unlogged, see
 * hint_fpi), and freezes versions older than vacuum_freeze_min_age below
 * the oldest snapshot (a logged change: readers then skip the commit log). */
typedef struct eng_vacuum_stats {
    uint64_t leaves;
    uint64_t versions; /* versions left in the leaves after removal */
    uint64_t removed, frozen, hinted, overflow_pages_freed;
    uint64_t horizon; /* oldest sequence a snapshot could still see */
} eng_vacuum_stats;
int eng_vacuum(eng_db *db, eng_vacuum_stats *st);

/* The highest commit sequence known durable (its batch record is on disk
 * and fsynced), and the highest assigned. */
uint64_t eng_durable_seq(eng_db *db);
uint64_t eng_last_seq(eng_db *db);

/* Write back every dirty page, then log a checkpoint and record it in
 * control; older log segments are archived (if set) and removed. */
int eng_checkpoint(eng_db *db);

/* What the last open's recovery did. */
typedef struct eng_recovery_info {
    uint64_t redo_lsn;      /* replay started here */
    uint64_t end_lsn;       /* the log ended here (appending resumed) */
    uint64_t recovered_lsn; /* LSN of the last record recovered */
    uint64_t recovered_seq; /* commit sequence of the last batch recovered */
    uint64_t records, actions_applied, actions_skipped, images_restored;
    uint32_t batch_ops_completed;          /* always 0: a batch cut short is aborted */
    uint64_t txns_committed, txns_aborted; /* batches replayed: committed,
                                 * and aborted (logged or cut by the crash) */
    int trimmed;                           /* a torn tail after end_lsn was cut */
} eng_recovery_info;
void eng_get_recovery_info(eng_db *db, eng_recovery_info *out);

/* Iterators read a snapshot: the one given, or one acquired at open and
 * released at close.  They hold no latch between calls, so they never
 * block the writer. */
typedef struct eng_iter eng_iter;
typedef struct eng_iter_options {
    const void *lower;
    size_t lower_len; /* inclusive; NULL = unbounded */
    const void *upper;
    size_t upper_len;             /* exclusive; NULL = unbounded */
    const eng_snapshot *snapshot; /* NULL = its own, taken at open */
} eng_iter_options;

int eng_iter_open(eng_db *db, const eng_iter_options *o, eng_iter **out);
int eng_iter_first(eng_iter *it);                               /* smallest key >= lower */
int eng_iter_last(eng_iter *it);                                /* largest key < upper */
int eng_iter_seek(eng_iter *it, const void *k, size_t kl);      /* first key >= k */
int eng_iter_seek_prev(eng_iter *it, const void *k, size_t kl); /* last key <= k */
int eng_iter_next(eng_iter *it);
int eng_iter_prev(eng_iter *it);
int eng_iter_valid(const eng_iter *it); /* 1 if positioned */
const void *eng_iter_key(const eng_iter *it, size_t *klen);
const void *eng_iter_value(const eng_iter *it, size_t *vlen);
void eng_iter_close(eng_iter *it);
/* Movement calls return ENG_OK when positioned, ENG_NOTFOUND when the
 * iterator ran off its bounds (then !valid), or an error. */

/* ---- verify, stats, debug ------------------------------------------------ */

/* Read every page (through the buffer pool, so a page being written is
 * never taken for a torn one), check checksums, headers, cells, order,
 * tree shape, sibling links and overflow chains, and report each problem
 * to FN (and to the corruption callback).  *problems gets the count.
 * Returns ENG_OK when clean, ENG_CORRUPTION when problems were found, or
 * another status when verification itself could not proceed, also when it
 * had found problems before it stopped (they are reported either way).
 * A poisoned handle (eng_poisoned) is not verified: ENG_POISONED, nothing
 * reported; its cache may hold an operation's unlogged half (reopen first). */
int eng_verify(eng_db *db, eng_corruption_fn fn, void *ctx, uint64_t *problems);

/* Verify a database directory that may be too damaged to open normally:
 * opens it read-only if it can and runs eng_verify; if the open fails on
 * corruption, scans every block's checksum instead. */
int eng_verify_dir(const char *dir, const eng_options *opts, eng_corruption_fn fn, void *ctx, uint64_t *problems);

/* What a verify could not check.  A page whose own bytes fail (checksum,
 * header, an all-zero page, a per-entry code) or cannot be read is
 * reported once, for itself; then no check that needs its contents runs
 * (what it refers to, its keys), and no check that pairs it with another
 * page (a sibling link, blocks nothing else refers to) is reported against
 * the intact one.  Those pages are listed here, so a verify that met them
 * is not taken for a complete check of the rest. */
#define ENG_VERIFY_UNCHECKED_LIST 32
typedef struct eng_verify_info {
    uint64_t problems;                                    /* reports delivered */
    uint64_t unchecked;                                   /* pages not checked beyond their own bytes */
    uint64_t unchecked_blocks[ENG_VERIFY_UNCHECKED_LIST]; /* the first ones, ascending */
    int tree_skipped;                                     /* no walk of the tree at all (meta or root
                               * unchecked, or the database did not open:
                               * only each block's own bytes were checked) */
    int leaks_skipped;                                    /* the check for blocks nothing refers to was
                               * skipped: an unchecked page may refer to them */
    uint64_t blocks_scanned;                              /* blocks of the data file read and checked */
    uint64_t wal_records;                                 /* log records read from the redo point */
} eng_verify_info;

/* eng_verify and eng_verify_dir, telling INFO (not NULL) what could not be
 * checked; INFO->problems is their *problems. */
int eng_verify_ex(eng_db *db, eng_corruption_fn fn, void *ctx, eng_verify_info *info);
int eng_verify_dir_ex(const char *dir, const eng_options *opts, eng_corruption_fn fn, void *ctx, eng_verify_info *info);

/* What an open of DIR would find, changing nothing and taking no lock (so
 * ask it of a directory nobody has open), by the rules on a database's
 * files at the top of engine/engine.c:
 *   ENG_OK          a database (control, its data file and the log up to
 *                   its checkpoint record are present; the open may still
 *                   find damage inside them, a control file that fails
 *                   its checksum included)
 *   ENG_NOTFOUND    no database: nothing of one, or the debris of an
 *                   interrupted creation (a writable open with
 *                   create_if_missing creates one)
 *   ENG_CORRUPTION  files of a database with one missing (control, data or
 *                   a WAL segment): every open refuses it; FN gets the
 *                   report saying what is missing and what is present
 * or the status of a directory that cannot be read. */
int eng_probe_dir(const char *dir, eng_corruption_fn fn, void *ctx);

typedef struct eng_stats {
    uint32_t page_size;
    int data_checksums;
    int io_backend;
    uint64_t cache_size; /* bytes of page frames */
    uint64_t cache_pages;
    uint64_t data_file_bytes;
    uint64_t nblocks;         /* blocks allocated in the data file */
    uint64_t high_water_mark; /* durable: blocks ever written and synced */
    uint64_t page_reads, page_writes, cache_hits, cache_misses, evictions;
    uint64_t syncs; /* data file fsyncs */
    uint64_t puts, deletes, gets, batches;
    uint64_t last_seq, durable_seq;
    int sync_mode, full_page_writes, wal_compression;
    uint64_t wal_segment_size;
    uint64_t wal_bytes;         /* record bytes appended since open */
    uint64_t wal_written_bytes; /* block bytes written to segments */
    uint64_t wal_records, wal_syncs, wal_insert_lsn, wal_durable_lsn;
    uint64_t images, image_bytes, image_raw_bytes; /* full-page images: count,
                                 * bytes logged, bytes before compression */
    uint64_t checkpoints;
    uint64_t archive_bytes, segments_archived, segments_removed, segments_recycled;
    uint64_t overflow_pages_written;
    uint64_t txn_commits, txn_aborts; /* since open */
    uint64_t snapshots_active, oldest_snapshot_seq;
    uint64_t hints_set;                        /* hint nibbles set by readers and vacuum */
    uint64_t hint_pages_written;               /* write-backs whose only change was hints */
    uint64_t hint_wal_records, hint_wal_bytes; /* wal_log_hints / hint_fpi */
    uint64_t versions_pruned;                  /* removed by writers making room, and vacuum */
    uint64_t vacuums;
    int wal_log_hints, hint_fpi;
    int block_protection_bytes_per_key;
    uint64_t kv_protection_bytes;         /* memory the codes take now (pool accounting) */
    uint64_t kv_protection_pages;         /* cached pages carrying codes */
    uint64_t kv_protection_keys;          /* entries covered */
    uint64_t kv_checks;                   /* entry and page codes verified */
    uint64_t kv_check_bytes;              /* bytes those checks hashed */
    uint64_t kv_code_bytes;               /* bytes hashed making codes (pages entering the pool, changes) */
    uint64_t kv_lazy_leaves;              /* leaves left uncoded at load (kv_lazy_leaves) */
    uint64_t kv_lazy_coded;               /* of those, coded at a later use */
    uint64_t corruption[ENG_LAYER_COUNT]; /* reports per layer */
} eng_stats;

int eng_get_stats(eng_db *db, eng_stats *st);

/* The last corruption report delivered on this handle (any thread);
 * returns 0 if there was none. */
int eng_last_corruption(eng_db *db, eng_corruption *out);

/* Debug hook for in-memory fault injection (cache bit flips): if BLOCK is
 * resident, pin it, latch it exclusively and return a pointer to its
 * frame bytes and the page size; the caller must call
 * eng_debug_frame_release.  NULL if not resident.  Writing through the
 * pointer changes the bytes and none of the per-KV codes: it models a
 * memory fault in a page at rest in the cache.  (The latch keeps the flip
 * out of an operation's window between checking a page and using or
 * recoding it, a window no code computed from the bytes can close; the
 * caller must hold no latch or engine lock.) */
void *eng_debug_frame_bytes(eng_db *db, uint64_t block, size_t *page_size);
void eng_debug_frame_release(eng_db *db, uint64_t block);
/* With BLOCK's frame held through eng_debug_frame_bytes: the whole-page
 * per-KV check a write-back makes (page code, every entry, the hint
 * states), a mismatch reported through the corruption callback like any
 * other.  1 on a mismatch, 0 when the codes agree, -1 when the frame
 * carries no codes (w = 0, or not resident).  For fault injectors that
 * measure the codes (crashtest.py protection): flip, check, restore. */
int eng_debug_frame_check(eng_db *db, uint64_t block);
/* With BLOCK's frame held through eng_debug_frame_bytes: how many of its
 * entry codes its bytes do not match, and in *PAGE whether its page code
 * does not, reporting nothing; -1 when the frame carries no codes (w = 0,
 * a leaf not coded yet) or is not resident.  A byte past the header lies
 * under one entry code at most, so a flip there that leaves the count
 * below what it was made a damaged code match again: the damage escaped
 * (the cache-flip injector's test); a header byte, under the page code
 * (whose fields also steer the entry checks), escaped when *PAGE went
 * from 1 to 0. */
int eng_debug_frame_mismatches(eng_db *db, uint64_t block, int *page);
/* With BLOCK's frame held through eng_debug_frame_bytes: a leaf read by a
 * reader and not coded yet (the pool codes such a leaf at its next use,
 * proving it by its page checksum until then) gets its codes now, its
 * checksum checked.  0 when the frame is coded (or needs no codes), 1
 * when the checksum failed (reported), -1 when not resident.  For fault
 * injectors that measure the codes: a flip into a frame without codes is
 * a trial of the page checksum, not of the codes. */
int eng_debug_frame_code(eng_db *db, uint64_t block);

/* Fault points (catalogue: engine/faultpoints.h).  Compiled in only in
 * the fault build (build/libengine-fiu.a, -DFIU_ENABLE); disarmed, each
 * costs one relaxed load.  Arming is process-wide; libfiu must have been
 * initialized (fiu_init) by the caller first. */
int eng_faults_compiled(void);
void eng_faults_arm(int on);
size_t eng_fault_point_count(void);
const char *eng_fault_point_name(size_t i);
const char *eng_fault_point_what(size_t i);

/* Largest block number + 1 currently allocated (for injectors). */
uint64_t eng_debug_nblocks(eng_db *db);

#ifdef __cplusplus
}
#endif
#endif /* ENGINE_H */
