/*
 * adapter_sqlite.c -- the stress adapter (adapter.h) for SQLite through its
 * C API (sqlite3.h): the driver, the oracle and their checks run unchanged
 * against an engine nobody here wrote.
 *
 * The database is one file, DIR/db.sqlite, with two tables:
 *
 *   kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID   the driver's keys, nothing else
 *   meta(id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL)
 *                                                  the commit sequence
 *
 * The commit sequence lives in the database, in the transaction of the
 * batch it numbers, so what a reopened database holds and the sequence it
 * reports cannot disagree:
 *   Q1  every write is one transaction (BEGIN IMMEDIATE ... COMMIT) on the
 *       writer connection under the handle's write mutex; it sets
 *       meta.seq = last + 1 with its rows, so sequence order is commit
 *       order and each batch has exactly one number;
 *   Q2  recovered_seq is meta.seq as the open found it (what recovery
 *       kept: a hot journal rolled back, a WAL's committed frames);
 *   Q3  a snapshot is a read transaction held open on a connection of its
 *       own (BEGIN; SELECT seq FROM meta; ... ROLLBACK at release): its
 *       sequence is the last commit it sees, read in the same transaction;
 *   Q4  durable_seq: a commit is durable when COMMIT returns with WAL and
 *       synchronous FULL or EXTRA (the log's frames are synced), and with
 *       a rollback journal (DELETE) only under EXTRA: the commit is the
 *       journal's unlink, which SQLite makes durable by syncing the
 *       directory under EXTRA alone (SQLite docs, PRAGMA synchronous); a
 *       power loss may bring the journal back and roll the last commit
 *       back.  With WAL and NORMAL a commit is synced only by a
 *       checkpoint, so durable_seq moves only when a checkpoint copied
 *       every frame of the log (PASSIVE: it never waits for a reader, so a
 *       held snapshot may leave frames behind and the sequence where it
 *       was); with DELETE and FULL or NORMAL it never moves past what the
 *       open recovered.  Those runs need --sync_mode off, the only mode in
 *       which the driver asks durable_seq instead of taking every
 *       acknowledged commit as durable.
 *
 * Connections: the driver calls one handle from many threads at once.
 * Reads (get, iterators, verify) use a connection per calling thread,
 * found in a pool keyed by pthread_self and cached in a thread-local slot
 * tagged with the handle's unique id (a closed handle's slot never
 * matches a new one).  Writes and checkpoints use one writer connection,
 * only under the write mutex (Q1: SQLite has one writer at a time anyway).
 * Snapshot connections are pooled and reused.  Every connection has a
 * busy timeout (BUSY_MS): SQLITE_BUSY becomes ST_BUSY only after it, and
 * PRAGMA cell_size_check=ON (a damaged cell is refused when read, not only
 * by integrity_check).  A
 * rollback journal (DELETE) lets a reader block a commit, so snapshots,
 * held across many ops, need WAL (check_options refuses the pair).
 *
 * Errors: SQLITE_CORRUPT and SQLITE_NOTADB -> ST_CORRUPTION, reported
 * through the callback (layer "sqlite", file db.sqlite, sqlite3_errmsg's
 * text); SQLITE_IOERR -> ST_IOERR; SQLITE_FULL -> ST_NOSPACE; SQLITE_BUSY,
 * SQLITE_LOCKED -> ST_BUSY.  A write that failed before COMMIT is rolled
 * back (not in doubt); one whose COMMIT failed with anything but BUSY is in
 * doubt (its frames or journal may be on disk).  verify is PRAGMA
 * integrity_check, each line it prints a report (layer
 * "sqlite_integrity_check", placed by its file alone: the page a line
 * names is the one its check inspected, often not the damaged one).
 *
 * What SQLite does not have, and this adapter therefore does not fake:
 *   - no fault hooks, no fault points (count 0), no native handle for the
 *     fault library: check_options refuses every option that needs them
 *     (stress lets --sync_fault_injection through with --faults_via posix:
 *     the door writes the power-loss journal from the file calls);
 *   - no page reader on a closed file that may not open: check_block NULL;
 *   - no old versions to collect: vacuum NULL (VACUUM rewrites the file,
 *     which is not what the driver's vacuum means);
 *   - no page checksums (cksumvfs is not in Debian's library): the
 *     driver's data_checksums and the other options of our engine's
 *     format are refused when set away from their defaults;
 *   - recovery's record count and torn-tail flag are unknown (0).
 * Options mapped: page_size -> PRAGMA page_size (creation), cache_size ->
 * PRAGMA cache_size (each connection), checkpoint_wal_bytes -> PRAGMA
 * wal_autocheckpoint (pages; WAL only), --sqlite_journal_mode,
 * --sqlite_synchronous.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter.h"
#include "promises.h"

#define DB_FILE "db.sqlite"
#define BUSY_MS 10000

typedef struct conn {
    sqlite3 *c;
    sqlite3_stmt *get, *put, *del, *seq_get, *seq_set;
    pthread_t owner;
    struct conn *next;
} conn;

struct st_db {
    char path[4200];
    st_corruption_fn fn;
    void *ctx;
    int wal, synchronous; /* synchronous: 0 FULL, 1 NORMAL, 2 EXTRA (st_open_options) */
    uint32_t page_size;
    uint64_t cache_size, autockpt_bytes;
    uint64_t id; /* unique per handle: the thread-local slot's tag */
    pthread_mutex_t pool_mu;
    conn *readers; /* one per thread (pool_mu) */
    conn *snaps;   /* snapshot connections not in use (pool_mu) */
    pthread_mutex_t write_mu;
    conn *writer;      /* write_mu */
    uint64_t last_seq; /* write_mu */
    _Atomic uint64_t last_pub, durable, checkpoints;
    uint64_t recovered;
};

struct st_snap {
    conn *k;
    uint64_t seq;
};

struct st_iter {
    st_db *db;
    sqlite3_stmt *s;
};

static _Atomic uint64_t next_handle_id = 1;
static __thread uint64_t tl_id;
static __thread conn *tl_conn;
static __thread int tl_in_doubt;

static void report(st_corruption_fn fn, void *ctx, const char *layer, int64_t block, int64_t off, const char *d) {
    if (!fn) return;
    st_corruption c = {layer, DB_FILE, block, off, d, -1};
    fn(ctx, &c);
}

/* SQLite's code as an st_status, with no report (native_status). */
static int st_code(int rc) {
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW: return ST_OK;
    case SQLITE_DONE: return ST_NOTFOUND;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return ST_CORRUPTION;
    case SQLITE_IOERR: return ST_IOERR;
    case SQLITE_FULL: return ST_NOSPACE;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return ST_BUSY;
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
    case SQLITE_TOOBIG: return ST_INVALID;
    default: return ST_OTHER;
    }
}

/* RC from connection C as an st_status; a corruption is reported with
 * what SQLite says about it. */
static int st_of(st_db *db, sqlite3 *c, int rc) {
    int st = st_code(rc);
    if (st == ST_CORRUPTION) report(db->fn, db->ctx, "sqlite", -1, -1, c ? sqlite3_errmsg(c) : sqlite3_errstr(rc));
    return st;
}

/* Our engine's options that mean nothing to SQLite (its format, its
 * protection, its log), refused when set away from their defaults. */
static const char *const meaningless[] = {"data_checksums",
                                          "full_page_writes",
                                          "wal_log_hints",
                                          "hint_fpi",
                                          "vacuum_freeze_min_age",
                                          "wal_compression",
                                          "block_protection_bytes_per_key",
                                          "kv_lazy_leaves",
                                          "io_backend",
                                          "wal_segment_size",
                                          "first_xid",
                                          "vacuum_one_in",
                                          "rocksdb_wal_recovery_mode",
                                          NULL};

/* ---- promises (promises.h) ----
 *
 * What SQLite's documentation promises, for --sqlite_journal_mode and
 * --sqlite_synchronous: atomic commit across a crash or power loss in
 * every mode (atomiccommit.html, wal.html), durability of a commit at
 * its return by mode (pragma.html#pragma_synchronous: Q4 reads it), an
 * SQLITE_IOERR or SQLITE_FULL for a failed call (rescode.html), and no
 * redundancy against damaged bytes (atomiccommit.html, Hardware
 * Assumptions; howtocorrupt.html). */
#define SQ_ATOMIC "https://www.sqlite.org/atomiccommit.html"
#define SQ_WAL    "https://www.sqlite.org/wal.html"
#define SQ_SYNC   "https://www.sqlite.org/pragma.html#pragma_synchronous"
#define SQ_RC     "https://www.sqlite.org/rescode.html"
#define SQ_HOW    "https://www.sqlite.org/howtocorrupt.html"
#define SQ_UNIX   "https://www.sqlite.org/src/file?name=src/os_unix.c&ci=version-3.40.1"
static const st_promise sqlite_rows[] = {
    {"power_loss", "any", "sqlite_journal_mode=wal,sqlite_synchronous=normal", ST_PROMISE_REPAIR, 0, SQ_SYNC,
     "WAL with NORMAL is consistent after a power loss, but a commit is synced at a checkpoint only and may roll "
     "back",
     NULL, 0},
    {"power_loss", "any", "sqlite_journal_mode=delete,sqlite_synchronous=normal", ST_PROMISE_NONE, 0, SQ_SYNC,
     "a rollback journal with NORMAL syncs less often: a power failure at just the wrong time can corrupt the "
     "database on a file system that does not order its writes (the power-loss model tears and reorders unsynced "
     "writes; docs/findings/sqlite-rollback-journal-normal-after-a-torn-power-loss.md)",
     NULL, 0},
    {"power_loss", "any", "sqlite_journal_mode=delete,sqlite_synchronous=full", ST_PROMISE_REPAIR, 0, SQ_SYNC,
     "the rollback journal's unlink commits; only EXTRA syncs the directory after it, so a commit followed closely "
     "by a power loss may roll back",
     NULL, 0},
    {"power_loss", "any", "", ST_PROMISE_REPAIR, 1, SQ_ATOMIC,
     "a transaction is atomic across a power failure; with WAL and FULL or EXTRA, or a rollback journal and "
     "EXTRA, it is durable once COMMIT returns",
     NULL, 0},
    {"kill", "any", "", ST_PROMISE_REPAIR, 1, SQ_SYNC,
     "transactions are durable across application crashes regardless of the synchronous setting or journal mode", NULL,
     0},
    {"torn_write", "any", "sqlite_journal_mode=delete,sqlite_synchronous=normal", ST_PROMISE_NONE, -1, SQ_SYNC,
     "a power failure at just the wrong time can corrupt a rollback-journal database with NORMAL (the power-loss "
     "row above): its tears are the power loss's",
     NULL, 0},
    {"torn_write", "any", "", ST_PROMISE_REPAIR, -1, SQ_ATOMIC,
     "SQLite does not assume a sector write is atomic: the journal's and the log's frames are checked before "
     "they are played back",
     NULL, 0},
    {"bitflip_page", "any", "", ST_PROMISE_NONE, -1, SQ_ATOMIC,
     "SQLite adds no redundancy to detect damaged bytes: it assumes what it reads is what it wrote (pages carry "
     "no checksum)",
     NULL, 0},
    {"bitflip_inflight", "any", "", ST_PROMISE_NONE, -1, SQ_HOW,
     "a bit flipped between memory and the disk is not noticed: pages carry no checksum, and the log's frame "
     "checksums are verified only when the log is recovered, where a frame that fails ends the log",
     NULL, 0},
    {"zero_page", "any", "", ST_PROMISE_NONE, -1, SQ_HOW,
     "a disk that changes content (a lost or misplaced write, a flipped bit) can corrupt the database; nothing "
     "checks a page against it",
     NULL, 0},
    {"read_error", "wal", "sqlite_journal_mode=wal", ST_PROMISE_REPAIR, -1, SQ_WAL,
     "a reader's failed read of the log fails its statement; an automatic checkpoint that fails leaves the log "
     "whole, to be copied by the next one (EIO is reported as SQLITE_CORRUPT, below)",
     NULL, 1},
    {"read_error", "any", "", ST_PROMISE_DETECT, -1, SQ_RC,
     "a failed read fails its statement; an EIO is SQLITE_IOERR_CORRUPTFS, which reaches the application as "
     "SQLITE_CORRUPT",
     NULL, 1},
    {"write_error", "dir", "", ST_PROMISE_NONE, -1, SQ_SYNC,
     "EXTRA syncs the directory after the journal's unlink; nothing says what a failed directory sync does (the "
     "runs: ignored; docs/findings/sqlite-failed-syncs.md)",
     NULL, 0},
    {"write_error", "any", "sqlite_journal_mode=wal", ST_PROMISE_REPAIR, -1, SQ_WAL,
     "a failed write of a commit's frames fails the COMMIT; an automatic checkpoint that fails leaves the log "
     "whole, to be copied again by the next",
     NULL, 0},
    {"write_error", "any", "", ST_PROMISE_DETECT, -1, SQ_RC,
     "a failed write fails the statement with SQLITE_IOERR (SQLITE_IOERR_WRITE); the transaction rolls back", NULL, 0},
    {"nospace", "any", "sqlite_journal_mode=wal", ST_PROMISE_REPAIR, -1, SQ_WAL,
     "a full disk fails a commit's frames with SQLITE_FULL; an automatic checkpoint that fails leaves the log "
     "whole",
     NULL, 0},
    {"nospace", "any", "", ST_PROMISE_DETECT, -1, SQ_RC,
     "a full disk fails the statement with SQLITE_FULL; the transaction rolls back", NULL, 0},
    {"short_io", "any", "", ST_PROMISE_REPAIR, -1, SQ_UNIX,
     "the unix VFS finishes a short transfer: unixWrite calls seekAndWrite again while it wrote fewer bytes than "
     "asked and more than none, seekAndRead calls pread again while it got some (only a read that meets the "
     "file's end is SQLITE_IOERR_SHORT_READ)",
     NULL, 0},
    {"sync_error", "data", "sqlite_journal_mode=wal", ST_PROMISE_NONE, -1, SQ_WAL,
     "a checkpoint syncs the database file after copying frames into it; nothing says what the database holds "
     "once the pages of a failed sync are dropped (two connections lost and resurrected keys after a reopen: "
     "docs/findings/sqlite-failed-syncs.md)",
     NULL, 0},
    {"sync_error", "any", "sqlite_journal_mode=wal,sqlite_synchronous=full|extra", ST_PROMISE_REPAIR, -1, SQ_WAL,
     "every commit syncs the log (a failure is SQLITE_IOERR_FSYNC to COMMIT); an automatic checkpoint whose sync "
     "fails leaves the log whole",
     NULL, 0},
    {"sync_error", "any", "", ST_PROMISE_NONE, -1, SQ_RC,
     "SQLITE_IOERR_FSYNC names the error; nothing says what a transaction holds once the pages of a failed sync "
     "are dropped, nor that an automatic checkpoint's failure reaches a statement (docs/findings/sqlite-failed-"
     "syncs.md)",
     NULL, 0},
};
static const char *const sqlite_options[] = {"sqlite_journal_mode", "sqlite_synchronous", "sync_mode", NULL};
static const char *const sqlite_door[] = {"power_loss", "kill",       "read_error",   "write_error", "nospace",
                                          "short_io",   "sync_error", "bitflip_page", "zero_page",   "bitflip_inflight",
                                          NULL};
const st_promises st_promises_sqlite = {"sqlite", sqlite_rows, sizeof sqlite_rows / sizeof *sqlite_rows, sqlite_options,
                                        sqlite_door};

/* Q4: a commit is durable when COMMIT returns: the table's crash row for
 * the journal mode and synchronous setting says a synced commit survives
 * a power loss. */
static int commit_durable(int wal, int synchronous) {
    st_open_options o = {.sqlite_journal_mode = !wal, .sqlite_synchronous = synchronous};
    const st_promise *r = st_promise_find(&st_promises_sqlite, "power_loss", "any", st_open_options_value, &o);
    return r && r->commit_survives == 1;
}

/* The pairs that cannot work whatever the command line (open checks them
 * too: a trace's restart may set another sync mode). */
static int check_pairs(const st_open_options *o, char *why, size_t cap) {
    if (!commit_durable(o->sqlite_journal_mode == 0, o->sqlite_synchronous) && o->sync_mode != 2) {
        snprintf(why, cap,
                 "--engine sqlite: --sqlite_synchronous=%s with --sqlite_journal_mode=%s does not make a commit "
                 "durable at its return (%s), but --sync_mode %s takes every acknowledged commit as durable: add "
                 "--sync_mode off",
                 o->sqlite_synchronous == 1 ? "normal" : "full", o->sqlite_journal_mode == 0 ? "wal" : "delete",
                 o->sqlite_journal_mode == 0 ? "the log is synced at checkpoints only"
                                             : "the journal's unlink is made durable under extra alone",
                 o->sync_mode == 1 ? "group" : "commit");
        return ST_NOTSUP;
    }
    return ST_OK;
}

static int check_options(const st_open_options *o, char *why, size_t cap) {
    int no_wal = o->sqlite_journal_mode == 1 && st_opt_listed(o->changed_options, "checkpoint_wal_bytes");
    int st = st_refuse_options(o, "sqlite", "SQLite", meaningless, no_wal ? "--checkpoint_wal_bytes (no WAL)" : NULL,
                               why, cap);
    if (st != ST_OK) return st;
    if (o->sqlite_journal_mode == 1 && st_opt_listed(o->changed_options, "acquire_snapshot_one_in")) {
        snprintf(why, cap,
                 "--engine sqlite: --acquire_snapshot_one_in needs --sqlite_journal_mode=wal (with a rollback "
                 "journal a snapshot's read transaction, held across ops, blocks every commit)");
        return ST_NOTSUP;
    }
    return check_pairs(o, why, cap);
}

/* ---- connections ---- */

static void conn_close(conn *k) {
    if (!k) return;
    sqlite3_finalize(k->get);
    sqlite3_finalize(k->put);
    sqlite3_finalize(k->del);
    sqlite3_finalize(k->seq_get);
    sqlite3_finalize(k->seq_set);
    sqlite3_close(k->c);
    free(k);
}

/* Run SQL (no rows wanted) on C. */
static int exec(st_db *db, sqlite3 *c, const char *sql) { return st_of(db, c, sqlite3_exec(c, sql, NULL, NULL, NULL)); }

/* A connection to DB's file with its settings.  CREATE: the first, which
 * may create the file.  Statements are prepared after the schema exists
 * (conn_prepare). */
static int conn_open(st_db *db, int create, conn **out) {
    *out = NULL;
    conn *k = calloc(1, sizeof *k);
    if (!k) return ST_OTHER;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(db->path, &k->c, flags, NULL);
    if (rc != SQLITE_OK) {
        int st = st_of(db, k->c, rc);
        conn_close(k);
        return st;
    }
    sqlite3_extended_result_codes(k->c, 1);
    sqlite3_busy_timeout(k->c, BUSY_MS);
    char sql[256];
    snprintf(
        sql, sizeof sql,
        "PRAGMA synchronous=%s; PRAGMA cache_size=-%llu; PRAGMA cell_size_check=ON; PRAGMA wal_autocheckpoint=%llu",
        (const char *const[]){"FULL", "NORMAL", "EXTRA"}[db->synchronous],
        (unsigned long long)(db->cache_size / 1024 ? db->cache_size / 1024 : 1),
        (unsigned long long)(db->autockpt_bytes / db->page_size));
    int st = exec(db, k->c, sql);
    if (st != ST_OK) {
        conn_close(k);
        return st;
    }
    *out = k;
    return ST_OK;
}

/* RC of one of the adapter's own statements on connection C: a statement
 * that no longer compiles (SQLITE_ERROR: no such table or column) means
 * the schema on disk changed under it (a flipped bit in sqlite_master's
 * text renames a column), which is damage to db.sqlite, reported as
 * corruption; anything else as st_of says. */
static int schema_st(st_db *db, sqlite3 *c, int rc) {
    if ((rc & 0xff) != SQLITE_ERROR) return st_of(db, c, rc);
    char d[200];
    snprintf(d, sizeof d, "the schema no longer holds the adapter's tables: %s", sqlite3_errmsg(c));
    report(db->fn, db->ctx, "sqlite", 0, -1, d);
    return ST_CORRUPTION;
}

static int conn_prepare(st_db *db, conn *k) {
    static const char *const sql[] = {"SELECT v FROM kv WHERE k = ?1",
                                      "INSERT OR REPLACE INTO kv(k, v) VALUES (?1, ?2)", "DELETE FROM kv WHERE k = ?1",
                                      "SELECT seq FROM meta WHERE id = 1", "UPDATE meta SET seq = ?1 WHERE id = 1"};
    sqlite3_stmt **s[] = {&k->get, &k->put, &k->del, &k->seq_get, &k->seq_set};
    for (size_t i = 0; i < 5; i++) {
        int rc = sqlite3_prepare_v3(k->c, sql[i], -1, SQLITE_PREPARE_PERSISTENT, s[i], NULL);
        if (rc != SQLITE_OK) return schema_st(db, k->c, rc);
    }
    return ST_OK;
}

/* The calling thread's read connection (opened on its first call). */
static conn *reader(st_db *db, int *st) {
    *st = ST_OK;
    if (tl_id == db->id && tl_conn) return tl_conn;
    pthread_t me = pthread_self();
    pthread_mutex_lock(&db->pool_mu);
    conn *k = db->readers;
    while (k && !pthread_equal(k->owner, me)) k = k->next;
    if (!k) {
        *st = conn_open(db, 0, &k);
        if (*st == ST_OK && (*st = conn_prepare(db, k)) != ST_OK) conn_close(k), k = NULL;
        if (k) {
            k->owner = me;
            k->next = db->readers;
            db->readers = k;
        }
    }
    pthread_mutex_unlock(&db->pool_mu);
    if (k) tl_id = db->id, tl_conn = k;
    return k;
}

/* meta.seq as connection K sees it. */
static int read_seq(st_db *db, conn *k, uint64_t *seq) {
    sqlite3_reset(k->seq_get);
    int rc = sqlite3_step(k->seq_get);
    if (rc == SQLITE_ROW) *seq = (uint64_t)sqlite3_column_int64(k->seq_get, 0);
    sqlite3_reset(k->seq_get);
    if (rc == SQLITE_DONE) {
        report(db->fn, db->ctx, "sqlite", -1, -1, "table meta has no row: the commit sequence is gone");
        return ST_CORRUPTION;
    }
    return rc == SQLITE_ROW ? ST_OK : st_of(db, k->c, rc);
}

/* ---- open and close ---- */

/* SQLite makes its files but not their directory.  Only the directory
 * itself is made: the driver refused a missing parent (a mistyped path). */
static int mkdir_one(const char *dir) { return mkdir(dir, 0755) && errno != EEXIST ? -1 : 0; }

static int a_close(st_db *db) {
    if (!db) return ST_OK;
    for (conn *k = db->readers, *n; k; k = n) n = k->next, conn_close(k);
    for (conn *k = db->snaps, *n; k; k = n) n = k->next, conn_close(k);
    /* The writer last: the last connection to close checkpoints the WAL
     * and removes it. */
    conn_close(db->writer);
    pthread_mutex_destroy(&db->pool_mu);
    pthread_mutex_destroy(&db->write_mu);
    free(db);
    return ST_OK;
}

static int a_open(const char *dir, const st_open_options *o, st_db **out) {
    *out = NULL;
    char why[256];
    if (check_pairs(o, why, sizeof why) != ST_OK) return ST_NOTSUP;
    if (mkdir_one(dir)) return errno == ENOSPC ? ST_NOSPACE : ST_IOERR;
    st_db *db = calloc(1, sizeof *db);
    if (!db) return ST_OTHER;
    snprintf(db->path, sizeof db->path, "%s/" DB_FILE, dir);
    db->fn = o->on_corruption;
    db->ctx = o->on_corruption_ctx;
    db->wal = o->sqlite_journal_mode == 0;
    db->synchronous = o->sqlite_synchronous;
    db->page_size = o->page_size ? o->page_size : 4096;
    db->cache_size = o->cache_size;
    db->autockpt_bytes = db->wal ? o->checkpoint_wal_bytes : 0;
    db->id = atomic_fetch_add(&next_handle_id, 1);
    pthread_mutex_init(&db->pool_mu, NULL);
    pthread_mutex_init(&db->write_mu, NULL);
    int st = conn_open(db, 1, &db->writer);
    char sql[512];
    /* page_size takes effect only while the file is empty (creation). */
    snprintf(sql, sizeof sql, "PRAGMA page_size=%u; PRAGMA journal_mode=%s", db->page_size, db->wal ? "WAL" : "DELETE");
    if (st == ST_OK) st = exec(db, db->writer->c, sql);
    if (st == ST_OK)
        st =
            schema_st(db, db->writer->c,
                      sqlite3_exec(db->writer->c,
                                   "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB) WITHOUT "
                                   "ROWID; CREATE TABLE IF NOT EXISTS meta(id INTEGER PRIMARY KEY CHECK (id = 1), seq "
                                   "INTEGER NOT NULL); INSERT OR IGNORE INTO meta(id, seq) VALUES (1, 0); COMMIT",
                                   NULL, NULL, NULL));
    if (st != ST_OK && db->writer && !sqlite3_get_autocommit(db->writer->c))
        sqlite3_exec(db->writer->c, "ROLLBACK", NULL, NULL, NULL);
    if (st == ST_OK) {
        sqlite3_stmt *s;
        int rc = sqlite3_prepare_v2(db->writer->c, "PRAGMA journal_mode", -1, &s, NULL);
        if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
            const char *m = (const char *)sqlite3_column_text(s, 0);
            if (!m || strcasecmp(m, db->wal ? "wal" : "delete")) st = ST_OTHER; /* the mode did not take */
        }
        sqlite3_finalize(s);
        rc = sqlite3_prepare_v2(db->writer->c, "PRAGMA page_size", -1, &s, NULL);
        if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) db->page_size = (uint32_t)sqlite3_column_int(s, 0);
        sqlite3_finalize(s);
    }
    if (st == ST_OK) st = conn_prepare(db, db->writer);
    if (st == ST_OK) st = read_seq(db, db->writer, &db->recovered);
    if (st != ST_OK) {
        a_close(db);
        return st;
    }
    /* Q4: what the open found is the oracle's new base either way. */
    db->last_seq = db->recovered;
    atomic_store(&db->last_pub, db->recovered);
    atomic_store(&db->durable, db->recovered);
    *out = db;
    return ST_OK;
}

/* ---- writes ---- */

static int step_done(st_db *db, conn *k, sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? ST_OK : st_of(db, k->c, rc);
}

static int a_write(st_db *db, const st_op *ops, size_t n, uint64_t *seq) {
    tl_in_doubt = 0;
    pthread_mutex_lock(&db->write_mu);
    conn *k = db->writer;
    uint64_t s = db->last_seq + 1;
    int st = exec(db, k->c, "BEGIN IMMEDIATE");
    for (size_t i = 0; i < n && st == ST_OK; i++) {
        sqlite3_stmt *q = ops[i].kind == ST_PUT ? k->put : k->del;
        sqlite3_bind_blob(q, 1, ops[i].key, (int)ops[i].klen, SQLITE_STATIC);
        if (ops[i].kind == ST_PUT)
            sqlite3_bind_blob(q, 2, ops[i].vlen ? ops[i].val : "", (int)ops[i].vlen, SQLITE_STATIC);
        st = step_done(db, k, q);
        sqlite3_clear_bindings(q);
    }
    if (st == ST_OK) {
        sqlite3_bind_int64(k->seq_set, 1, (sqlite3_int64)s);
        st = step_done(db, k, k->seq_set);
    }
    if (st == ST_OK) {
        int rc = sqlite3_exec(k->c, "COMMIT", NULL, NULL, NULL);
        st = st_of(db, k->c, rc);
        /* A COMMIT refused for a lock left the transaction open: nothing
         * reached the file.  Any other failure may have left it there. */
        if (st != ST_OK && (rc & 0xff) != SQLITE_BUSY) tl_in_doubt = 1;
    }
    if (st != ST_OK && !sqlite3_get_autocommit(k->c)) sqlite3_exec(k->c, "ROLLBACK", NULL, NULL, NULL);
    if (st == ST_OK || tl_in_doubt) {
        /* In doubt: the number may be on disk; it is never given again. */
        db->last_seq = s;
        atomic_store(&db->last_pub, s);
    }
    if (st == ST_OK && commit_durable(db->wal, db->synchronous)) atomic_store(&db->durable, s); /* Q4 */
    pthread_mutex_unlock(&db->write_mu);
    if (st == ST_OK) *seq = s;
    return st;
}

static int a_in_doubt(st_db *db) {
    (void)db;
    return tl_in_doubt;
}

/* ---- reads ---- */

static int get_on(st_db *db, conn *k, const void *key, size_t klen, st_buf *val) {
    sqlite3_bind_blob(k->get, 1, key, (int)klen, SQLITE_STATIC);
    int rc = sqlite3_step(k->get), st = ST_NOTFOUND;
    if (rc == SQLITE_ROW) {
        const void *v = sqlite3_column_blob(k->get, 0);
        size_t len = (size_t)sqlite3_column_bytes(k->get, 0);
        st = ST_OK;
        if (val->cap < len || !val->data) {
            void *p = realloc(val->data, len ? len : 1);
            if (!p)
                st = ST_OTHER;
            else
                val->data = p, val->cap = len ? len : 1;
        }
        if (st == ST_OK) {
            if (len) memcpy(val->data, v, len);
            val->len = len;
        }
    } else if (rc != SQLITE_DONE) {
        st = st_of(db, k->c, rc);
    }
    sqlite3_reset(k->get);
    sqlite3_clear_bindings(k->get);
    return st;
}

static int a_get(st_db *db, const void *key, size_t klen, st_buf *val) {
    int st;
    conn *k = reader(db, &st);
    return k ? get_on(db, k, key, klen, val) : st;
}

/* A range SELECT on connection K over [lower, upper) (NULL: open). */
static int iter_on(st_db *db, conn *k, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    *out = NULL;
    st_iter *it = calloc(1, sizeof *it);
    if (!it) return ST_OTHER;
    it->db = db;
    const char *sql =
        up ? "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k" : "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k";
    int rc = sqlite3_prepare_v2(k->c, sql, -1, &it->s, NULL);
    if (rc != SQLITE_OK) {
        free(it);
        return st_of(db, k->c, rc);
    }
    /* A zero-length blob, never NULL: NULL would compare as no key at all. */
    sqlite3_bind_blob(it->s, 1, lo && ll ? lo : "", (int)(lo ? ll : 0), SQLITE_TRANSIENT);
    if (up) sqlite3_bind_blob(it->s, 2, ul ? up : "", (int)ul, SQLITE_TRANSIENT);
    *out = it;
    return ST_OK;
}

static int a_iter_open(st_db *db, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    int st;
    conn *k = reader(db, &st);
    return k ? iter_on(db, k, lo, ll, up, ul, out) : st;
}

static int iter_step(st_iter *it) {
    int rc = sqlite3_step(it->s);
    if (rc == SQLITE_ROW) return ST_OK;
    if (rc == SQLITE_DONE) return ST_NOTFOUND;
    return st_of(it->db, sqlite3_db_handle(it->s), rc);
}
static int a_iter_first(st_iter *it) {
    sqlite3_reset(it->s);
    return iter_step(it);
}
static int a_iter_next(st_iter *it) { return iter_step(it); }
static const void *a_iter_key(st_iter *it, size_t *kl) {
    const void *p = sqlite3_column_blob(it->s, 0);
    *kl = (size_t)sqlite3_column_bytes(it->s, 0);
    return p ? p : "";
}
static const void *a_iter_value(st_iter *it, size_t *vl) {
    const void *p = sqlite3_column_blob(it->s, 1);
    *vl = (size_t)sqlite3_column_bytes(it->s, 1);
    return p ? p : "";
}
static void a_iter_close(st_iter *it) {
    if (!it) return;
    sqlite3_finalize(it->s);
    free(it);
}

/* ---- snapshots (Q3) ---- */

static int a_snapshot(st_db *db, st_snap **out, uint64_t *seq) {
    *out = NULL;
    if (!db->wal) return ST_NOTSUP; /* a held read transaction would block every commit */
    pthread_mutex_lock(&db->pool_mu);
    conn *k = db->snaps;
    if (k) db->snaps = k->next;
    pthread_mutex_unlock(&db->pool_mu);
    int st = ST_OK;
    if (!k && (st = conn_open(db, 0, &k)) == ST_OK && (st = conn_prepare(db, k)) != ST_OK) conn_close(k), k = NULL;
    if (!k) return st;
    st_snap *s = calloc(1, sizeof *s);
    st = s ? exec(db, k->c, "BEGIN") : ST_OTHER;
    if (st == ST_OK) st = read_seq(db, k, &s->seq); /* the read that fixes the snapshot */
    if (st != ST_OK) {
        if (!sqlite3_get_autocommit(k->c)) sqlite3_exec(k->c, "ROLLBACK", NULL, NULL, NULL);
        conn_close(k);
        free(s);
        return st;
    }
    s->k = k;
    *out = s;
    *seq = s->seq;
    return ST_OK;
}

static void a_snapshot_release(st_db *db, st_snap *s) {
    if (!s) return;
    conn *k = s->k;
    free(s);
    if (sqlite3_exec(k->c, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK) {
        conn_close(k);
        return;
    }
    pthread_mutex_lock(&db->pool_mu);
    k->next = db->snaps;
    db->snaps = k;
    pthread_mutex_unlock(&db->pool_mu);
}

static int a_get_at(st_db *db, st_snap *s, const void *key, size_t klen, st_buf *val) {
    return s ? get_on(db, s->k, key, klen, val) : a_get(db, key, klen, val);
}

static int a_iter_open_at(st_db *db, st_snap *s, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    return s ? iter_on(db, s->k, lo, ll, up, ul, out) : a_iter_open(db, lo, ll, up, ul, out);
}

/* ---- checkpoint, verify ---- */

static int a_checkpoint(st_db *db) {
    if (!db->wal) return ST_OK; /* a rollback journal leaves nothing to copy */
    pthread_mutex_lock(&db->write_mu);
    int nlog = 0, nckpt = 0;
    uint64_t s = db->last_seq;
    int rc = sqlite3_wal_checkpoint_v2(db->writer->c, "main", SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt);
    int st = st_of(db, db->writer->c, rc);
    if (st == ST_OK && nlog >= 0 && nlog == nckpt) atomic_store(&db->durable, s); /* Q4 */
    pthread_mutex_unlock(&db->write_mu);
    if (st == ST_OK) atomic_fetch_add(&db->checkpoints, 1);
    return st;
}

/* PRAGMA integrity_check on connection C: each line not "ok" a report. */
static int integrity(sqlite3 *c, st_corruption_fn fn, void *ctx, uint64_t *problems) {
    *problems = 0;
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(c, "PRAGMA integrity_check", -1, &s, NULL);
    if (rc != SQLITE_OK) {
        if (st_code(rc) == ST_CORRUPTION) report(fn, ctx, "sqlite", -1, -1, sqlite3_errmsg(c)), ++*problems;
        return st_code(rc);
    }
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(s, 0);
        if (!line || !strcmp(line, "ok")) continue;
        /* Placed by the file alone: the page a line names is the one its
         * check inspected, often not the damaged one (a parent's pointer,
         * a page "never used" because the pointer to it was damaged), and
         * SQLite's pages are not the door's 4 KiB blocks; the line, which
         * names the page, is the report's detail. */
        report(fn, ctx, "sqlite_integrity_check", -1, -1, line);
        ++*problems;
    }
    int st = rc == SQLITE_DONE ? ST_OK : st_code(rc);
    if (st == ST_CORRUPTION) report(fn, ctx, "sqlite", -1, -1, sqlite3_errmsg(c)), ++*problems;
    sqlite3_finalize(s);
    return st == ST_OK && *problems ? ST_CORRUPTION : st;
}

static int a_verify(st_db *db, uint64_t *problems) {
    int st;
    *problems = 0;
    conn *k = reader(db, &st);
    return k ? integrity(k->c, db->fn, db->ctx, problems) : st;
}

/* The closed file through a fresh connection (an empty page cache: every
 * page comes from disk). */
static int a_verify_dir(const char *dir, const st_open_options *o, uint64_t *problems) {
    *problems = 0;
    char p[4200];
    snprintf(p, sizeof p, "%s/" DB_FILE, dir);
    if (access(p, F_OK)) return ST_NOTFOUND;
    sqlite3 *c = NULL;
    int rc = sqlite3_open_v2(p, &c, SQLITE_OPEN_READWRITE, NULL);
    int st = st_code(rc);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(c, BUSY_MS);
        st = integrity(c, o->on_corruption, o->on_corruption_ctx, problems);
    } else if (st == ST_CORRUPTION) {
        report(o->on_corruption, o->on_corruption_ctx, "sqlite", -1, -1, c ? sqlite3_errmsg(c) : sqlite3_errstr(rc));
        ++*problems;
    }
    sqlite3_close(c);
    return st;
}

/* A directory without db.sqlite that holds files holds another engine's
 * database (or a damaged one of ours): opening would create a new file
 * beside it and the post-open check would call every key lost.  A
 * db.sqlite whose header is damaged is SQLite's to refuse (SQLITE_NOTADB:
 * it never writes a new database over a file that is not empty), so the
 * open reports it and the oracle judges it by the row of the damage. */
static int a_probe_dir(const char *dir, char *why, size_t cap) {
    if (cap) why[0] = 0;
    char p[4200];
    snprintf(p, sizeof p, "%s/" DB_FILE, dir);
    if (access(p, F_OK) == 0) return ST_OK;
    DIR *d = opendir(dir);
    if (!d) return ST_NOTFOUND;
    struct dirent *e;
    int other = 0;
    while ((e = readdir(d)) && !other) other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    if (!other) return ST_NOTFOUND;
    snprintf(why, cap, "no " DB_FILE ", but the directory holds other files (another engine's database?)");
    return ST_CORRUPTION;
}

static uint64_t a_durable(st_db *db) { return atomic_load(&db->durable); }

static void a_recovery(st_db *db, st_recovery *out) { *out = (st_recovery){db->recovered, 0, 0}; }

static void a_stats(st_db *db, st_stats *out) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->pool_mu);
    for (conn *k = db->readers; k; k = k->next) {
        int cur, hi;
        if (sqlite3_db_status(k->c, SQLITE_DBSTATUS_CACHE_HIT, &cur, &hi, 0) == SQLITE_OK)
            out->cache_hits += (uint64_t)cur;
        if (sqlite3_db_status(k->c, SQLITE_DBSTATUS_CACHE_MISS, &cur, &hi, 0) == SQLITE_OK)
            out->cache_misses += (uint64_t)cur, out->page_reads += (uint64_t)cur;
    }
    pthread_mutex_unlock(&db->pool_mu);
    out->checkpoints = atomic_load(&db->checkpoints);
    out->durable_seq = atomic_load(&db->durable);
    out->last_seq = atomic_load(&db->last_pub);
}

static void *a_native(st_db *db) {
    (void)db;
    return NULL; /* nothing the fault library could use */
}
static const char *a_strerror(int rc) { return sqlite3_errstr(rc); }
/* The database file, its log (-wal, or the rollback -journal), nothing
 * else: the -shm index is reached through mmap, which the door cannot see. */
static const char *a_file_kind(const char *rel) {
    size_t n = strlen(DB_FILE);
    if (strncmp(rel, DB_FILE, n)) return NULL;
    if (!rel[n]) return "data";
    if (!strcmp(rel + n, "-wal") || !strcmp(rel + n, "-journal")) return "wal";
    return NULL;
}

static size_t no_points(void) { return 0; }
static const char *no_point(size_t i) {
    (void)i;
    return "";
}

const st_engine st_engine_sqlite = {
    .name = "sqlite",
    .planted_bug = NULL,
    .library_version = sqlite3_libversion,
    .file_kind = a_file_kind,
    .file_kinds = "data,wal",
    .check_options = check_options,
    .open = a_open,
    .close = a_close,
    .write = a_write,
    .in_doubt = a_in_doubt,
    .snapshot = a_snapshot,
    .snapshot_release = a_snapshot_release,
    .get_at = a_get_at,
    .iter_open_at = a_iter_open_at,
    .vacuum = NULL,
    .get = a_get,
    .iter_open = a_iter_open,
    .iter_first = a_iter_first,
    .iter_next = a_iter_next,
    .iter_key = a_iter_key,
    .iter_value = a_iter_value,
    .iter_close = a_iter_close,
    .checkpoint = a_checkpoint,
    .verify = a_verify,
    .verify_dir = a_verify_dir,
    .check_block = NULL,
    .probe_dir = a_probe_dir,
    .durable_seq = a_durable,
    .recovery = a_recovery,
    .stats = a_stats,
    .native = a_native,
    .native_status = st_code,
    .native_strerror = a_strerror,
    .fault_point_count = no_points,
    .fault_point_name = no_point,
    .fault_point_what = no_point,
};
