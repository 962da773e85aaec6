/*
 * frame.h -- the fault library's frame, what all of its in-process
 * files share: the context struct, the per-thread state and PRNG streams,
 * the counts, the draws and the ledger helper (frame.c), and the on-disk
 * layout the injectors mirror.  Nothing outside faults/ includes it.
 *
 * The files, each including only the ones below it (no circle):
 *
 *   faults.c  options, open/close, pause: the top, it sets up the others
 *     fiu.c     the libfiu points: enabling by exact name, the external
 *               callback (read/write errors, ENOSPC, short I/O, kill
 *               points); fiu_int.h
 *       inject.c  the engine's I/O hooks (in-flight flips, torn, lost,
 *                 misdirected and zeroed writes, fsync failures, the
 *                 journal calls) and flt_tick (flips on disk and in cached
 *                 pages); inject_int.h
 *         cacheflip.c  bitflip_cache's checked patterns (cacheflip.h)
 *         frame.c   per-thread state and PRNG streams, draws, the ledger
 *                   helper, counts; this header
 *
 * Determinism (faults.h): every decision is a draw from a stream owned by
 * (seed, thread index, class).  A thread that called flt_thread_start owns
 * its streams outright; every other thread (engine-internal paths, a
 * process that never registered) shares the streams of thread index -1,
 * under a mutex.  A class's stream is drawn once per opportunity of that
 * class and, when the fault fires, again for its parameters (which bit,
 * which block ...), so enabling another class never moves the points at
 * which this one fires.
 */
#ifndef FAULTS_FRAME_H
#define FAULTS_FRAME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "faults.h"
/* The on-disk formats (pages, WAL blocks, the control file): the engine's
 * own definitions, shared, never copied (a documented file format, not an
 * engine internal). */
#include "format.h"

#include "common/rng.h"

#define FLT_MAX_POINTS 64 /* flt_counts.point_hits has 64 slots */

/* The header bytes a write of a page stamps every time (checksum, LSN,
 * block: engine/bufpool.c prepare_write): a frame written back is
 * compared past them (D7). */
#define FLT_PAGE_STAMPED (PH_BLOCK_OFF + 4u)

/* ---- PRNG: one splitmix64 stream per (seed, thread, class) ----
 * The generator is common/rng.h's; flt_rng names a stream of it in the
 * frame's structs, and the seeding below (which streams a seed gives) is
 * the fault library's own. */

typedef struct flt_rng {
    uint64_t s;
} flt_rng;

/* Streams: one per fault class, then the delay stream (delay.c), which
 * is no class: it injects nothing. */
#define FLT_STREAM_DELAY FLT_CLASS_COUNT
#define FLT_STREAM_COUNT (FLT_CLASS_COUNT + 1)

static inline void flt_rng_seed(flt_rng *r, uint64_t seed, int thread, int cls) {
    uint64_t t = (uint64_t)(int64_t)thread;
    r->s = rng_mix64(rng_mix64(rng_mix64(seed) ^ (t * RNG_GOLDEN + 0x7f4a7c15ull)) ^
                     ((uint64_t)cls * 0xd1b54a32d192ed03ull + 1));
}

static inline uint64_t flt_rng_next(flt_rng *r) { return rng_next(&r->s); }

/* Uniform in [0, n) (n > 0), by multiply-high: no modulo bias worth the name. */
static inline uint64_t flt_rng_below(flt_rng *r, uint64_t n) { return rng_below(&r->s, n); }

/* ---- per-thread state ---- */

/* A buffer of the hooks' own that a replaced op->buf points at (an
 * in-flight flip's copy, a zeroed page) until the op's after().  With
 * batched I/O up to a window of requests are between before() and after()
 * at once, so a thread keeps several. */
typedef struct flt_buf {
    void *p;
    size_t cap;
    int used;
} flt_buf;

typedef struct flt_thr {
    int thread;                    /* index from flt_thread_start, or -1 */
    _Atomic int64_t op;            /* from flt_op; -1 before the first */
    flt_rng rng[FLT_STREAM_COUNT]; /* unused when thread == -1 (shared streams) */
    flt_buf *bufs;
    size_t nbufs;
    /* Set by the hooks, read by fiu.c's callback on the same thread: */
    int io_kind;           /* 1 + ENG_IO_READ or 1 + ENG_IO_WRITE of the
                               * last read or write before(), 0 before any
                               * (uring points: which class a submission or
                               * completion belongs to; without the hooks
                               * installed, none) */
    int sync_fiu;          /* before(SYNC) drew a sync_error for the
                               * engine/io/fsync point: it fires next */
    const char *sync_path; /* the file of that fsync (valid until after()) */
    int sync_fiu_fired;    /* it fired: after(SYNC) drops dirty data */
    int file_off;          /* the last hooked I/O's file kind is not one
                            * of fault_files: the I/O classes draw
                            * nothing (flt_draw) */
    int deferred;          /* with fault_files: 1 + the class an engine
                            * point drew for the I/O whose before() comes
                            * next (fiu.c), 0 none; with its errno, its
                            * point's index and name */
    int deferred_err;
    size_t deferred_idx;
    const char *deferred_point;
    /* Kill points reached during the current op, per point (fiu.c): the
     * op they were counted in and how many times (before_kill's NTH). */
    int64_t kill_op[FLT_MAX_POINTS];
    uint32_t kill_n[FLT_MAX_POINTS];
    int kill_pin;          /* flt_kill_at: 1 + the point's index, 0 none */
    uint64_t kill_pin_nth; /* ... at its NTH arrival */
    int64_t kill_pin_op;   /* ... during this op */
    struct flt_thr *next;  /* every state of the context, for flt_close */
} flt_thr;

/* One libfiu point the context enabled; its failinfo. */
typedef struct flt_point {
    struct flt_ctx *f;
    int idx;  /* eng_fault_point index */
    int kind; /* FLT_PK_* */
    const char *name;
    int enabled;
    int door; /* one of the door's kill points: no libfiu point, inject.c
               * draws it in before() */
} flt_point;

/* What a point injects (fiu.c's table): READ read_error; WRITE
 * write_error or nospace; EIO write_error only; SHORT short_io; FSYNC the
 * sync_error before(SYNC) decided; URING read_error or write_error by the
 * thread's io_kind; KILL kill; DELAY a pause (delay.c), never a failure. */
enum {
    FLT_PK_NONE = 0,
    FLT_PK_READ,
    FLT_PK_WRITE,
    FLT_PK_EIO,
    FLT_PK_SHORT,
    FLT_PK_FSYNC,
    FLT_PK_URING,
    FLT_PK_KILL,
    FLT_PK_DELAY
};

/* Damage this process made to DIR/data that is still on disk (D1-D4 in
 * faults.h, flt_damage_present): the evidence that lets the oracle tell
 * a flip nothing overwrote, which a clean final verify must have reported,
 * from one that was overwritten (masked). */
enum { FLT_DMG_PRESENT = 0, FLT_DMG_GONE, FLT_DMG_UNKNOWN };
typedef struct flt_damage {
    uint64_t seq;        /* its ledger line (this process's ledger handle) */
    uint64_t off, len;   /* the bytes of DIR/data that differ from what the engine wrote */
    uint8_t mask;        /* a flip of one byte: its XOR mask (two equal flips cancel) */
    const void *creator; /* the write op that puts it on disk, until that op's after() */
    int state;           /* FLT_DMG_* */
    int zeroed;          /* a zeroed page (zero_page): D8 */
} flt_damage;

/* A bitflip_cache flip in a frame's header bytes that the page code
 * covers, until the frame's next write-back (D7): the frame as it was
 * right after the flip.  Written back byte for byte unchanged (but for
 * the fields the pool stamps on every write) means no check stood
 * between the damaged frame and the disk. */
#define FLT_CFLIP_MAX 64
typedef struct flt_cflip {
    uint64_t seq, block;
    uint8_t *frame; /* page-size copy */
} flt_cflip;

/* A bitflip_cache flip of this process (cacheflip.c, flt_tick_cache): its byte in the
 * frame and the value it left there.  While that byte still holds the
 * value, the flip may still be in the cached page, and a later flip into
 * the same part may make an even count there (the ledger's pair_of).
 * Chained by block; an entry whose byte no longer holds its value is
 * dropped when its block is flipped again. */
#define FLT_CRECENT_BUCKETS 1024
typedef struct flt_crecent {
    uint64_t seq, block;
    uint32_t byte;
    uint8_t val, mask; /* what the flip left at BYTE, and its bit */
    struct flt_crecent *next;
} flt_crecent;

struct flt_ctx {
    uint64_t gen;  /* unique per context: keys the thread-local cache */
    flt_options o; /* copy; strings below are owned copies */
    char *run_dir, *db_dir, *kill_points, *delay_sites, *fault_files;
    size_t db_dir_len;
    flt_ledger *ledger;
    flt_journal *journal;
    eng_io_hooks hooks;

    _Atomic int paused;
    int armed;                  /* we called eng_faults_arm(1) */
    int owns_fiu;               /* FL3: this context holds libfiu's table */
    _Atomic uint32_t page_size; /* learned from data-file I/O; 0 = not yet */
    _Atomic uint64_t ctl_hwm;   /* high-water mark of the last control file written; 0 = none seen */
    _Atomic uint64_t ctl_redo;  /* and its redo point (LSN); 0 = none seen */

    flt_point points[FLT_MAX_POINTS];
    size_t npoints;
    /* The door's kill points (via_door): door_kill[i] is the index in
     * points of flt_door_kill_point_name(i), or -1 when not enabled. */
    int door_kill[16];
    int door_kills; /* 1 if any is enabled */
    /* doorio.c: the before() the door's I/O error draw calls next. */
    int (*door_io_next)(void *ctx, eng_io_op *op);
    void (*door_io_after_next)(void *ctx, eng_io_op *op); /* and the after() its flips call */
    /* doorio.c: the files a write's in-flight flip went to, by their
     * names now (a rename carries the flip along; under mu). */
    char door_flipped[16][64];
    unsigned door_nflipped;
    int fsync_point; /* engine/io/fsync is enabled: sync_error
                               * splits its firings with hook/sync */

    pthread_mutex_t mu; /* the thread list and the shared streams */
    flt_thr *threads;
    flt_rng anon_rng[FLT_STREAM_COUNT]; /* thread index -1 */

    pthread_mutex_t dmg_mu; /* the damage table, and the WAL tail below */
    flt_damage *dmg;
    size_t ndmg, capdmg;
    flt_cflip *cflips;                         /* header flips in cache frames not yet written back (D7) */
    _Atomic size_t ncflips;                    /* read without dmg_mu: a write's quick test */
    flt_crecent *crecent[FLT_CRECENT_BUCKETS]; /* cache flips that may still be there (under dmg_mu) */
    char wal_tail_name[24];                    /* the WAL segment of the last completed write ("" none) */
    uint64_t wal_tail_off, wal_tail_len;       /* and its bytes: where the log ends */
    char wal_pend_name[24];                    /* the last write when an fsync of its segment began */
    uint64_t wal_pend_off, wal_pend_len;
    char wal_sync_name[24];              /* ... and when that fsync succeeded: the last synced */
    uint64_t wal_sync_off, wal_sync_len; /* write, the end of the last synced group ("" none) */
    char wal_edge_name[24];              /* the last write to the segment before the tail's: */
    uint64_t wal_edge_off, wal_edge_len; /* where the log crossed into its newest file ("" none) */
    _Atomic uint64_t last_data_block;    /* 1 + the block of the last completed data write; 0 none */

    _Atomic uint64_t injected[FLT_CLASS_COUNT];
    _Atomic uint64_t delays; /* pauses made (delay.c) */
    _Atomic uint64_t point_hits[FLT_MAX_POINTS];
    _Atomic uint64_t point_checks[FLT_MAX_POINTS];
};

/* frame.c */
/* A new context's frame: its generation (keys the thread-local cache) and
 * its mutexes.  The caller seeds anon_rng. */
void flt_frame_init(flt_ctx *f);
flt_thr *flt_thr_get(flt_ctx *f); /* the calling thread's state (created on demand) */
/* A buffer of LEN bytes of T's own for a write's damaged copy (NULL when
 * none can be had), and its return (a pointer not T's: nothing): a write
 * hook never changes the caller's buffer, and the after() of a write
 * gives back whatever of T's it finds in op->buf. */
void *flt_buf_take(flt_thr *t, size_t len);
void flt_buf_give(flt_thr *t, const void *p);
void flt_thr_free_bufs(flt_thr *t);
/* One opportunity of class CLS: 1 with odds 1 in one_in[CLS], else 0 (and
 * 0 without drawing when the class is off or injection is paused). */
int flt_draw(flt_ctx *f, flt_thr *t, int cls);
/* A parameter draw in [0, n) from the class's stream (n > 0); CLS may
 * also be FLT_STREAM_DELAY. */
uint64_t flt_below(flt_ctx *f, flt_thr *t, int cls, uint64_t n);
/* An event for class CLS at POINT with the thread's op and index filled
 * in (and the phase). */
flt_event flt_event_for(flt_ctx *f, flt_thr *t, int cls, const char *point);
/* 1 if NAME is one of the comma-separated names of LIST (spaces around a
 * name are ignored): kill_points, delay_sites. */
int flt_list_has(const char *list, const char *name);
/* NULL if every name of the comma-separated LIST is KNOWN (a name and
 * its length), and there is one at least; else where the first unknown
 * name begins (LIST itself when it names nothing). */
const char *flt_list_invalid(const char *list, int (*known)(const char *name, size_t n));
/* An event of class CLS at POINT for the data file's bytes [OFFSET,
 * OFFSET + LEN) of BLOCK. */
flt_event flt_page_event(flt_ctx *f, flt_thr *t, int cls, const char *point, uint64_t block, uint64_t offset,
                         uint64_t len);
/* Append E to the ledger and count it for CLS.  0, or -errno when the
 * line could not be written: the caller must then not inject (a fault
 * the ledger does not know would be judged a failure of the engine). */
int flt_record(flt_ctx *f, int cls, const flt_event *e);
/* flt_record that also gives the line's seq (for the damage table). */
int flt_record_seq(flt_ctx *f, int cls, const flt_event *e, uint64_t *seq);
static inline int flt_paused(flt_ctx *f) { return atomic_load_explicit(&f->paused, memory_order_relaxed); }

#endif
