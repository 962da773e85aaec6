/*
 * faults.h -- the fault library's interface for the stress driver.
 *
 * One call configures every injector from one seed and the per-class
 * options of docs/fault-classes.md; the library then works through two
 * windows into the engine, and nothing else:
 *   - the engine's I/O hooks (eng_io_hooks, from flt_hooks): in-flight bit
 *     flips, torn, lost, misdirected and zeroed writes, fsync failures
 *     that drop the dirty data as Linux may, and the power-loss journal;
 *   - the engine's libfiu fault points (engine/faultpoints.h), enabled by
 *     exact name with an external callback: read and write errors, ENOSPC,
 *     short transfers, and the kill points of whitebox crash tests;
 * plus, between operations (flt_tick), bit flips in pages and WAL blocks
 * on disk and in cached pages (through eng_debug_frame_bytes).
 *
 * Determinism: every decision comes from the run's seed through a PRNG
 * stream per thread (never libfiu's global generator): stream = f(seed,
 * thread index, class).  With one thread and a deterministic engine (ops
 * counted, not timed), one seed gives the same faults at the same points.
 *
 * Every injection is appended to the ledger (ledger.h) with its exact
 * location before it takes effect; counts per class and per point are
 * kept for the report.
 */
#ifndef FAULTS_FAULTS_H
#define FAULTS_FAULTS_H

#include <stdint.h>

#include "engine.h"
#include "journal.h"
#include "ledger.h"

/* Fault classes: the report keys of docs/fault-classes.md, in this order. */
#define FLT_CLASSES(X)                                                        \
    X(FLT_BITFLIP_PAGE, "bitflip_page", "bitflip_page_one_in")                \
    X(FLT_BITFLIP_WAL, "bitflip_wal", "bitflip_wal_one_in")                   \
    X(FLT_BITFLIP_CACHE, "bitflip_cache", "bitflip_cache_one_in")             \
    X(FLT_BITFLIP_INFLIGHT, "bitflip_inflight", "bitflip_inflight_one_in")    \
    X(FLT_TORN_WRITE, "torn_write", "torn_write_one_in")                      \
    X(FLT_MISDIRECTED_WRITE, "misdirected_write", "misdirected_write_one_in") \
    X(FLT_LOST_WRITE, "lost_write", "lost_write_one_in")                      \
    X(FLT_ZERO_PAGE, "zero_page", "zero_page_one_in")                         \
    X(FLT_READ_ERROR, "read_error", "read_fault_one_in")                      \
    X(FLT_WRITE_ERROR, "write_error", "write_fault_one_in")                   \
    X(FLT_NOSPACE, "nospace", "nospace_one_in")                               \
    X(FLT_SHORT_IO, "short_io", "short_io_one_in")                            \
    X(FLT_SYNC_ERROR, "sync_error", "sync_fault_one_in")                      \
    X(FLT_POWER_LOSS, "power_loss", "sync_fault_injection")                   \
    X(FLT_KILL, "kill", "kill_random_test")

enum flt_class {
#define FLT_ENUM(id, key, opt) id,
    FLT_CLASSES(FLT_ENUM)
#undef FLT_ENUM
        FLT_CLASS_COUNT
};

const char *flt_class_name(int cls);   /* report key */
const char *flt_class_option(int cls); /* stress option (without "--") */

#define FLT_DELAY_MAX_US_DEFAULT 5000

typedef struct flt_options {
    uint64_t seed;
    const char *run_dir; /* ledger and journal live here */
    const char *db_dir;  /* the database directory */
    /* 1 in N chance per opportunity; 0 = off.  Indexed by enum flt_class
     * (FLT_POWER_LOSS and FLT_KILL use the two fields below instead). */
    uint64_t one_in[FLT_CLASS_COUNT];
    int sync_fault_injection;  /* journal every write for power-loss simulation */
    uint64_t kill_random_test; /* each kill point hit kills with odds 1 in N */
    const char *kill_points;   /* comma list of kill point names (NULL: all) */
    int kill_pins;             /* enable every kill point for flt_kill_at even
                                * when kill_random_test is 0 (a replayed op
                                * trace that pins a kill) */
    int phase_recovery;        /* this process is recovering: ledger phase */
    int cache_patterns;        /* bitflip_cache draws flip patterns, each
                                * checked and undone (cacheflip.h) */
    /* Pauses that widen race windows (delay.c), not a fault class: at
     * each delay opportunity (the engine's delay/... points; before a
     * write, a read or an fsync and after a write or an fsync, in the I/O
     * hooks) a pause with odds 1 in delay_one_in (0: none), a sleep of
     * up to delay_max_us microseconds (0: FLT_DELAY_MAX_US_DEFAULT) or a
     * yield; and at every kill that fires, before it (kill/late).  Each
     * is a ledger line of class "delay". */
    uint64_t delay_one_in;
    uint64_t delay_max_us;
    const char *delay_sites; /* comma list of the sites that may pause
                              * (flt_delay_sites_invalid); NULL: all */
    /* The file kinds the I/O classes (read_error, write_error, nospace,
     * short_io, sync_error) strike: a comma list of "data", "wal",
     * "control" and "dir" (a directory's fsync or a directory made or
     * removed); NULL: all.  An I/O of another kind draws nothing.  The
     * kind is the path's (inject.c); a libfiu point fired inside an I/O
     * takes the kind of its thread's last hooked I/O, except the WAL's
     * append point (wal) and the checkpoint's control point (control).
     * A bug in how one kind's failure is handled hides behind the
     * calls of a more frequent kind (an engine fsyncs its log far more
     * often than its data file); a run on one kind meets it. */
    const char *fault_files;
    /* The hooks are fed by the door at the POSIX boundary (door.h), not
     * by the engine's eng_io_hooks: every sync_error stays on the hook
     * route (the engine's engine/io/fsync point sits in engine/io.c, which
     * a call through the door never passes, so a firing sent there would
     * do nothing), and the data file is told by its name relative to
     * db_dir, "data", since the door numbers files from 1. */
    int via_door;
    /* An engine's file kind of a database file ("data", "wal" or
     * "control"; NULL: none of them, as an info log or a lock file), from
     * its path relative to db_dir: how fault_files and the door's kill
     * points tell another engine's files apart (RocksDB's *.sst, *.log,
     * MANIFEST-*; SQLite's database and its -wal).  NULL: ours, by the
     * names engine/format.h gives its files. */
    const char *(*file_kind)(const char *rel);
    /* Called once on the thread a kill point fires on, after its ledger
     * line and right before SIGKILL: the caller's last chance to note
     * what it did (stress writes its op count there, and the killed op's
     * trace line).  POINT is the kill point; NTH counts the times the
     * thread reached it during its current op (flt_op), this one
     * included: flt_kill_at(POINT, NTH) kills the same op at the same
     * place.  May be NULL. */
    void (*before_kill)(const char *point, uint64_t nth);
} flt_options;

void flt_options_init(flt_options *o);

typedef struct flt_ctx flt_ctx;

/* Set everything up: fiu_init, the libfiu points (by exact name), the
 * ledger and (with sync_fault_injection, or sync_fault_one_in so a failed
 * fsync can drop dirty data) the journal; arms the engine's
 * points (eng_faults_arm) when any point is enabled.  The engine must be
 * the fault build (eng_faults_compiled()) when libfiu classes or kill
 * points are asked for: else ENG_NOTSUP.  Returns an eng_status. */
int flt_open(const flt_options *o, flt_ctx **out);
void flt_close(flt_ctx *f);

/* Hooks to pass in eng_options.io_hooks; valid until flt_close. */
const eng_io_hooks *flt_hooks(flt_ctx *f);

/* Per thread: call once when a worker starts (index 0..), then before each
 * operation with its number (the ledger's op and thread fields, and the
 * points at which in-process injectors act). */
void flt_thread_start(flt_ctx *f, int thread);
void flt_op(flt_ctx *f, uint64_t op);

/* Reseed the calling thread's streams (every class) from SEED instead of
 * the run's seed: the stress driver's op traces (--trace_ops,
 * --replay_ops) give each op a seed of its own, so the faults an op draws
 * stay the same when a shrinker removes other ops before it. */
void flt_thread_reseed(flt_ctx *f, uint64_t seed);

/* Between operations, in the calling thread: maybe flip a bit in a cached
 * page (bitflip_cache), in a page of the data file or in a WAL block on
 * disk (bitflip_page, bitflip_wal).  DB may be NULL (no cache flips). */
void flt_tick(flt_ctx *f, eng_db *db);

/* Flip bit BIT of block BLOCK of the data file now, in the calling
 * thread, as a tick's bitflip_page would (the same ledger line at
 * tick/data, damage table and block hashes), paused or not: a replayed
 * op trace that pins the flip a traced run drew (docs/formats.md, Op
 * trace), so that ops removed before it do not move it to another page.
 * Nothing happens when the page size is unknown or BLOCK is past the
 * end of the file; BIT is taken modulo the page's bits. */
void flt_flip_page_at(flt_ctx *f, uint64_t block, uint64_t bit);

/* With bitflip_page on, N page flips in the closed data file (point
 * rest/data), each drawn as a tick's (a block by class or coldness, a
 * bit by the page's format) among the pages recovery will not restore
 * (LSN below the redo point: no image of them in the log past it),
 * paused or not: stress's settlement makes them between a clean close
 * and its verify of the closed files, which must report every one
 * (oracle V4b), as pg_checksums must.  A flip
 * between operations stays on disk that long only on a page nothing
 * writes again; these meet every region of every page type at rest. */
void flt_flip_at_rest(flt_ctx *f, unsigned n);

/* The crash of a kill from outside that asked for it (stress's
 * --damage_at_kill: crashtest sends SIGUSR2 before its SIGKILL): the
 * flips and zeroed blocks a kill point makes at the crash (crash/data,
 * crash/wal, crash/control, by the classes on), drawn from the shared
 * streams (thread -1, op -1), then SIGKILL.  No kill line: the restart
 * counts the kill as any SIGKILL from outside. */
_Noreturn void flt_crash_now(flt_ctx *f);

/* Flip bit BIT of the cached frame of block BLOCK now, in the calling
 * thread, as a tick's bitflip_cache would (the same ledger line at
 * tick/cache, the damage the oracle then expects), paused or not: a
 * replayed op trace that pins the cache flip a traced run drew.  A
 * drawn flip picks its block among the file's and needs it resident,
 * so every op removed before it moves it (or finds no frame); pinned,
 * it stays on its block.  Nothing happens when BLOCK is not resident
 * or past the end; BIT is taken modulo the page's bits. */
void flt_flip_cache_at(flt_ctx *f, eng_db *db, uint64_t block, uint64_t bit);

/* Kill the process at the NTH time (1 or more) the calling thread
 * reaches kill point POINT during its current op (the last flt_op), with
 * the ledger line and before_kill of a drawn kill: a replayed op trace
 * that pins the kill a traced run drew (docs/formats.md, Op trace), so
 * that ops removed before it do not move it.  A draw counts hits of a
 * point over the run, and every op removed moved the hit that killed.
 * Needs the point enabled (kill_random_test or kill_pins); the pin holds
 * for the current op only, that point is not drawn during it, and an
 * arrival counts while injection is not paused (flt_pause).  Returns
 * ENG_INVALID for a name that is not one kill point of the catalogue. */
int flt_kill_at(flt_ctx *f, const char *point, uint64_t nth);

/* 1 if LIST is a comma list of one or more kill points of the engine's
 * catalogue (kill_points, a trace's kill:POINT:N). */
int flt_kill_points_valid(const char *list);

/* The door's kill points, for an engine with none of its own (via_door):
 * kill/door/OP/KIND before a write or an fsync of a file of KIND (data,
 * wal, control; an fsync of a directory is kill/door/sync/dir), and
 * kill/door/create, /rename, /unlink and /truncate before those calls on
 * any file of the database.  Drawn with odds 1 in kill_random_test at
 * each such call, limited by kill_points like the engine's, counted per
 * op and pinned by flt_kill_at the same way; the kill happens before the
 * call is issued. */
size_t flt_door_kill_point_count(void);
/* The index in flt_counts' point_hits and point_checks of the enabled
 * point NAME (an engine's or the door's), or -1. */
int flt_point_index(const flt_ctx *f, const char *name);
const char *flt_door_kill_point_name(size_t i);
const char *flt_door_kill_point_what(size_t i);
/* The file kind point I is for ("data", "wal", "control"), "dir" for a
 * directory's fsync, NULL for a call on any file. */
const char *flt_door_kill_point_kind(size_t i);

/* NULL if LIST is a comma list of one or more delay sites (the engine's
 * delay/... points, hook/read/before, hook/read/after, hook/write/before,
 * hook/write/after, hook/sync/before, hook/sync/after, kill/late); else where in
 * LIST the first name that is none begins (LIST itself when it names
 * nothing). */
const char *flt_delay_sites_invalid(const char *list);

/* NULL if LIST names only file kinds of fault_files (data, wal,
 * control, dir), at least one; else where its first other name begins. */
const char *flt_fault_files_invalid(const char *list);

/* Stop injecting (a final verify, or shutdown); arming stays off. */
void flt_pause(flt_ctx *f, int paused);

typedef struct flt_counts {
    uint64_t injected[FLT_CLASS_COUNT];
    uint64_t point_hits[64];   /* per fault point (faultpoints.h order): times it fired */
    uint64_t point_checks[64]; /* times it was reached while armed */
    uint64_t delays;           /* pauses made (delay_one_in); no class's */
} flt_counts;
void flt_get_counts(flt_ctx *f, flt_counts *out);

/* Damage still on disk.  The ledger seqs (this context's lines) of the
 * corruption this process put into DIR/data that nothing has overwritten
 * since: bitflip_page flips, zeroed pages, misdirected pages at the block
 * they landed on, the unwritten tail of a torn write when it differs from
 * the new page, flips in a written buffer, flips in a read buffer (D5) and
 * cache flips written back unchecked (D7).  Fills up to CAP of SEQS
 * and returns how many there are.  The rules that make "present" a fact:
 *   D1  an entry is made before the damage reaches the file (an injected
 *       write's counts once that write completed; a failed one is dropped)
 *   D2  any later completed write to the data file that overlaps it marks
 *       it gone (over-eager: a write that rewrote the same bytes also
 *       counts, so gone may be wrong, present never is)
 *   D3  a second flip of the same byte with the same mask cancels both
 *   D4  dirty data rolled back after a failed fsync of the data file makes
 *       every entry unknown (old contents came back)
 *   D5  a flip in the buffer of a completed read is damage the engine
 *       took in: present for good (its page check must refuse the bytes)
 *   D6  removing or creating the data file takes what was in it along
 *   D7  a bitflip_cache flip in the header bytes the per-KV page code
 *       covers ([20, 40): past the checksum, LSN and block the pool
 *       stamps on every write) whose frame is then written back byte for
 *       byte as it was right after the flip went to disk with no check in
 *       between (KV4 must refuse such a frame): present for good, like D5.
 *       A write of the block with any other bytes ends the watch (the
 *       frame changed: whether the change laundered the flip is not
 *       provable); at most 64 flips are watched at once
 *   D8  a flip of the file's bytes in place inside a zeroed page makes
 *       the zeroing unknown: the page is no longer all zero, so the
 *       zero-page rule cannot see it (the flip's own entry stands, and
 *       the page checksum must report the block)
 *   D9  a block zeroed in place (zero_page between operations or at a
 *       kill) marks every entry inside it gone: its bytes are zeros now,
 *       judged as the zeroing's own entry
 * The stress driver asks after its final verify of the closed files:
 * present damage that no report matched escaped the page checks (oracle
 * V4b). */
size_t flt_damage_present(flt_ctx *f, uint64_t *seqs, size_t cap);

flt_ledger *flt_get_ledger(flt_ctx *f);
flt_journal *flt_get_journal(flt_ctx *f);

/* Copy file SRC to DST, a new file (O_EXCL), whole or not at all (a
 * failed copy is removed).  0 or -errno. */
int flt_copy_file(const char *src, const char *dst);

/* The log sweep (stress --wal_sweep, point "sweep/wal"): a site is one
 * bit of one byte of a WAL segment the reader relies on, OFF its file offset, BLOCK
 * the log block holding it, REGION its region's name (record_header,
 * record_payload, block_header, or synced_sector for a zeroed sector, as
 * the ledger's WAL lines name them). */
typedef struct flt_sweep_site {
    uint64_t off, block;
    int bit;
    int zero; /* 1: the whole 512-byte sector at OFF zeroed (no bit) */
    const char *region;
} flt_sweep_site;

/* Up to CAP sites in segment REL ("wal/" + its name) of DB_DIR, over
 * the file offsets [LO, HI), which must hold whole records only (the
 * stretch a recovery replayed): up to a quarter of CAP sectors to zero
 * (newest first) that a later block witnesses durable, then one bit per
 * sector with record bytes, the newest three quarters of the rest first,
 * then older sectors drawn from SEED.  Reads the file, writes nothing; 0
 * when it cannot be read. */
size_t flt_wal_sweep_sites(const char *db_dir, const char *rel, uint64_t lo, uint64_t hi, uint64_t seed,
                           flt_sweep_site *out, size_t cap);

#endif
