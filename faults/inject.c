/*
 * inject.c -- the in-process injectors: the engine's I/O hooks (flt_hooks)
 * and the between-operations flips and zeroed blocks of flt_tick.
 *
 * Hooks (eng_io_hooks; engine/io.c calls before() once per logical
 * operation and after() once it completed, on the same thread):
 *
 *   before(WRITE of DIR/data)  every enabled class draws once, in this
 *                              order; the first that fires acts, the
 *                              others' firings at the same write are
 *                              dropped (one fault per write keeps each one
 *                              provable):
 *     lost_write         op->skip = 1
 *     misdirected_write  op->offset = another block of the file's
 *                        allocated range (never the same block)
 *     zero_page          op->buf = a zeroed buffer of our own
 *     torn_write         op->len = k * 512 for a random k in [1, len/512)
 *     bitflip_inflight   op->buf = our copy of the page with one bit
 *                        flipped (the caller's buffer may be a cache
 *                        frame: never written)
 *   before(SYNC of any file)   sync_error: fail with -EIO, and first (with
 *                              the journal) roll the file's unsynced writes
 *                              back: Linux's "dirty data dropped".  With the
 *                              engine's points compiled in, half of these
 *                              firings (a parameter draw) go to the point
 *                              engine/io/fsync instead: before() marks the
 *                              thread, the point fails the fsync in the
 *                              kernel's place (ledger line by fiu.c), and
 *                              after(SYNC) drops the dirty data the same way
 *   after(READ of DIR/data)    bitflip_inflight: flip one bit of the bytes
 *                              read, before the engine checks them
 *   and, with the journal open (sync_fault_injection, or sync_fault_one_in
 *   for the drops below), flt_journal_before(op) with the final
 *   op right before it is issued and flt_journal_after(op) once it
 *   completed, for every operation of every file (paused or not).
 *
 * Ledger lines (FL1: written before the fault takes effect):
 *   class               point       file  block     offset         len        bit/mask
 *   lost_write          hook/write  data  the block its offset     page size  -
 *   misdirected_write   hook/write  data  INTENDED  where it went  page size  -
 *                                         block     (other block)  (note "to block T")
 *                       (both: region, the type of the page that missed
 *                        its block: clog, meta, leaf, ...; ledger.h)
 *   zero_page           hook/write  data  block     its offset     page size  -
 *   torn_write          hook/write  data  block     first byte     bytes not  -
 *                                                   NOT written    written    (note "wrote N of M")
 *   bitflip_inflight    hook/write  data  block     its offset     page size  yes
 *                       hook/read   data  block     its offset     bytes read yes
 *   write_error,        write/partial  data  block of  its offset  bytes      -
 *   nospace             (after a data-file write failed   its offset        issued
 *                       once part of it was issued: the range may be torn;
 *                       err, note "failed after N of M bytes were issued")
 *   sync_error          hook/sync   rel. path, err EIO
 *                       engine/io/fsync  (fiu.c's line) rel. path, err EIO
 *                       sync/drop_dirty  rel. path  -  offset and len of one
 *                                  write rolled back (one line each, newest
 *                                  first, after the hook/sync line)
 *   bitflip_cache       tick/cache  data  block     block * ps     page size  yes
 *                       (part_offset, part_len: the bytes of the page one
 *                        parity bit of the per-KV codes covers around the
 *                        flipped bit, part_code: which code, page, entry
 *                        or none: flip_part; pair_of: an earlier flip
 *                        still in that part, crecent_pair; pair_check:
 *                        with pair_of, whether the two escape the code
 *                        that covers them, tested in the frame)
 *   bitflip_page        tick/data   data  block     block * ps     page size  yes
 *                       crash/data  (the same, right before a kill's SIGKILL;
 *                                    pre and post: the block's hashes)
 *                       region: the page region of the bit (place.h)
 *   zero_page           tick/data   data  block     block * ps     page size  -
 *                       crash/data  (between operations, and right before a
 *                                    kill's SIGKILL: a block drawn by
 *                                    class; pre, post)
 *                       region (hook/write too): the block's class
 *   bitflip_wal         tick/wal    wal/NAME  4 KiB block of the segment,
 *                       crash/wal         offset and len of that block (the
 *                                         last one may be partial)  yes
 *                       region: the byte's class in the log (place.h)
 * "bit" is the bit's index within [offset, offset + len): the byte at
 * offset + bit / 8 was XORed with mask = 1 << (bit % 8).
 *
 * sync_error and dropped data: Linux may drop the dirty pages of a file
 * whose fsync failed (they are marked clean; a later read may see the old
 * data), so an engine that retries the fsync, or trusts what it wrote
 * before, loses data silently.  When the fsync of a file fails here, every
 * write to that file that completed and that no successful fsync covers
 * (the power-loss step's rule, journal.h) is rolled back on disk right
 * then, the harsher of what Linux may do (it may also keep the new data in
 * the page cache), each with its own ledger line before it (counted as
 * sync_error: counts stay equal to ledger lines).  That needs the journal,
 * which flt_open opens whenever sync_fault_one_in > 0 and the database
 * directory is known; without it only the fsync failure is injected.  A
 * drop that fails half way (I/O error, broken journal) still fails the
 * fsync: its ledger lines say which writes went back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "cacheflip.h"
#include "damage_int.h"
#include "delay_int.h"
#include "door.h"
#include "doordisk_int.h"
#include "frame.h"
#include "inject_int.h"
#include "place.h"
#include "walview.h"

#define SECTOR 512u

/* ---- files and sizes ---- */

static int is_data_path(const char *path) {
    if (!path) return 0;
    size_t n = strlen(path);
    return (n >= 5 && strcmp(path + n - 5, "/data") == 0) || strcmp(path, "data") == 0;
}

/* The engine's hooks give the data file id 0; the door numbers every
 * file from 1, so through it (via_door) the data file is the one named
 * "data" right under the database directory. */
static int is_data_file(flt_ctx *f, const eng_io_op *op) {
    if (op->file_id == 0) return is_data_path(op->path);
    return f->o.via_door && op->file_id > 0 && op->path && !strcmp(flt_rel_path(f, op->path), "data");
}

static const char *const file_kinds[] = {"data", "wal", "control", "dir"};

static int is_file_kind(const char *name, size_t n) {
    for (size_t i = 0; i < sizeof file_kinds / sizeof *file_kinds; i++)
        if (strlen(file_kinds[i]) == n && !memcmp(file_kinds[i], name, n)) return 1;
    return 0;
}

const char *flt_fault_files_invalid(const char *list) { return flt_list_invalid(list, is_file_kind); }

/* OP's file kind for fault_files: the data file, a WAL segment, the
 * control file (or its temporary), else a directory (an fsync of one, the
 * WAL's directory made) or another file of the database's (LOCK).
 * Another engine's files are named by its own rule (o.file_kind). */
const char *flt_file_kind(flt_ctx *f, const eng_io_op *op) {
    if (op->kind == ENG_IO_DIRSYNC || !op->path) return "dir";
    if (f->o.file_kind) return f->o.file_kind(flt_rel_path(f, op->path));
    if (is_data_path(op->path)) return "data";
    const char *rel = flt_rel_path(f, op->path);
    if (!strncmp(rel, "wal/", 4)) return "wal";
    if (!strncmp(rel, CONTROL_NAME, strlen(CONTROL_NAME))) return "control";
    return "dir";
}

/* PATH relative to the database directory, for the ledger. */
const char *flt_rel_path(flt_ctx *f, const char *path) {
    if (!path) return NULL;
    if (f->db_dir && strncmp(path, f->db_dir, f->db_dir_len) == 0 && path[f->db_dir_len] == '/')
        return path + f->db_dir_len + 1;
    /* Opened through another spelling of the directory: keep "wal/NAME"
     * for segments, else the base name. */
    const char *b = strrchr(path, '/');
    if (!b) return path;
    if (b - path >= 4 && strncmp(b - 4, "/wal", 4) == 0) return b - 3;
    if (b - path == 3 && strncmp(path, "wal", 3) == 0) return path;
    return b + 1;
}

static int page_size_ok(uint64_t v) { return v == 4096 || v == 8192 || v == 16384; }

/* Data-file requests are one page at a page-aligned offset: that is where
 * the page size is learned. */
static void learn_page_size(flt_ctx *f, const eng_io_op *op) {
    if (page_size_ok(op->len) && op->offset % op->len == 0 &&
        atomic_load_explicit(&f->page_size, memory_order_relaxed) != op->len)
        atomic_store(&f->page_size, (uint32_t)op->len);
}

/* A whole control file being written (to its temporary name, renamed
 * over the old one once synced): note its high-water mark and redo
 * point, for the block classes hwm_below, hwm_above and since_redo
 * (place.h).  Only a hint: a control file that never lands moves a few
 * draws off the mark by a block or two. */
static void learn_hwm(flt_ctx *f, const eng_io_op *op) {
    if (!op->path || !op->buf || op->offset != 0 || op->len < CT_REDO_LSN_OFF + 8) return;
    const char *slash = strrchr(op->path, '/');
    if (strcmp(slash ? slash + 1 : op->path, "control.tmp") != 0) return;
    const uint8_t *b = op->buf;
    atomic_store_explicit(&f->ctl_hwm, fmt_get64(b + CT_HWM_OFF), memory_order_relaxed);
    atomic_store_explicit(&f->ctl_redo, fmt_get64(b + CT_REDO_LSN_OFF), memory_order_relaxed);
}

/* The page size, or 0 if no data-file I/O has shown it and DIR/control
 * cannot tell either. */
static uint32_t page_size_of(flt_ctx *f) {
    uint32_t ps = atomic_load_explicit(&f->page_size, memory_order_relaxed);
    if (ps || !f->db_dir) return ps;
    char path[4200];
    snprintf(path, sizeof path, "%s/control", f->db_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    uint8_t b[4];
    if (pread(fd, b, 4, CT_PAGE_SIZE_OFF) == 4) {
        uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        if (page_size_ok(v)) ps = v;
    }
    close(fd);
    if (ps) atomic_store(&f->page_size, ps);
    return ps;
}

/* Flip MASK in the byte at OFF of the file at PATH with our own
 * descriptor.  0 or -errno. */
static int flip_file_byte(const char *path, uint64_t off, uint8_t mask) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -errno;
    uint8_t b;
    int rc = 0;
    if (pread(fd, &b, 1, (off_t)off) != 1) {
        rc = -EIO;
    } else {
        b ^= mask;
        if (pwrite(fd, &b, 1, (off_t)off) != 1) rc = -EIO;
    }
    close(fd);
    return rc;
}

/* after() of a data-file write that failed once part of it was issued (a
 * short transfer, then an error on the rest; or an error the OS gave for
 * bytes it may have written): the range may now hold old and new bytes
 * mixed, a page torn as a crash tears it.  The engine poisons the handle
 * and recovery must rebuild the page from its full-page image; with
 * full_page_writes off there is none (V0).  The ledger line names the
 * range, counted in the class of the error (write_error or nospace), as
 * sync/drop_dirty is counted in sync_error. */
static void note_partial_write(flt_ctx *f, const eng_io_op *op) {
    uint32_t ps = page_size_of(f);
    int cls = op->result == -ENOSPC ? FLT_NOSPACE : FLT_WRITE_ERROR;
    flt_event e = flt_event_for(f, flt_thr_get(f), cls, "write/partial");
    e.file = "data";
    e.block = ps ? (int64_t)(op->offset / ps) : -1;
    e.offset = (int64_t)op->offset;
    e.len = (int64_t)op->issued;
    e.err = cls == FLT_NOSPACE ? "ENOSPC" : "EIO";
    char note[96];
    snprintf(note, sizeof note, "failed after %llu of %llu bytes were issued", (unsigned long long)op->issued,
             (unsigned long long)op->len);
    e.note = note;
    flt_record(f, cls, &e);
}

/* The last completed write to a WAL segment: the log's end, where the
 * tail rules of recovery decide (bitflip_wal's unsynced tail).  When the
 * write is to another segment than the tail's, the tail before it is the
 * log's crossing from one file to the next (bitflip_wal's segment edge). */
static void note_wal_tail(flt_ctx *f, const eng_io_op *op) {
    const char *rel = flt_rel_path(f, op->path);
    if (!rel || strncmp(rel, "wal/", 4) != 0 || strlen(rel) >= sizeof f->wal_tail_name) return;
    pthread_mutex_lock(&f->dmg_mu);
    if (f->wal_tail_name[0] && strcmp(rel, f->wal_tail_name) != 0) {
        memcpy(f->wal_edge_name, f->wal_tail_name, sizeof f->wal_edge_name);
        f->wal_edge_off = f->wal_tail_off, f->wal_edge_len = f->wal_tail_len;
    }
    snprintf(f->wal_tail_name, sizeof f->wal_tail_name, "%s", rel);
    f->wal_tail_off = op->offset;
    f->wal_tail_len = (uint64_t)op->result;
    pthread_mutex_unlock(&f->dmg_mu);
}

/* An fsync of a WAL segment: when it begins, the last write to that
 * segment is what it will cover (a write completed later is not); when
 * it succeeds, that write ends the last synced group, whose records
 * recovery must never trim (bitflip_wal's synced group).  A failed fsync
 * promotes nothing. */
static void note_wal_sync(flt_ctx *f, const eng_io_op *op, int done) {
    const char *rel = flt_rel_path(f, op->path);
    if (!rel || strncmp(rel, "wal/", 4) != 0) return;
    pthread_mutex_lock(&f->dmg_mu);
    if (!done && !strcmp(rel, f->wal_tail_name)) {
        memcpy(f->wal_pend_name, f->wal_tail_name, sizeof f->wal_pend_name);
        f->wal_pend_off = f->wal_tail_off, f->wal_pend_len = f->wal_tail_len;
    } else if (done && op->result == 0 && !strcmp(rel, f->wal_pend_name)) {
        memcpy(f->wal_sync_name, f->wal_pend_name, sizeof f->wal_sync_name);
        f->wal_sync_off = f->wal_pend_off, f->wal_sync_len = f->wal_pend_len;
    }
    pthread_mutex_unlock(&f->dmg_mu);
}

/* Read LEN bytes at OFF of the file at PATH: 1 if whole. */
static int read_at(const char *path, uint64_t off, void *buf, size_t len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int ok = pread(fd, buf, len, (off_t)off) == (ssize_t)len;
    close(fd);
    return ok;
}
static int read_block(const char *path, uint64_t block, size_t ps, void *buf) {
    return read_at(path, block * ps, buf, ps);
}

/* Do the LEN bytes at OFF of the file at PATH differ from P?  (A torn
 * write's unwritten tail is damage only when the old bytes there differ
 * from the new page's.)  Unreadable: assume they do not (no claim). */
static int file_differs(const char *path, uint64_t off, const void *p, size_t len) {
    uint8_t *b = malloc(len);
    int differs = b && read_at(path, off, b, len) && memcmp(b, p, len) != 0;
    free(b);
    return differs;
}

/* ---- block classes (place.h): where zero_page and some page flips land ---- */

/* What the data file says about its blocks, read once per draw: the
 * meta page's root and commit-log directory, the size, the durable
 * high-water mark the control file last carried, the last block written. */
typedef struct blk_view {
    int fd;
    uint32_t ps;
    uint64_t nblocks, root, hwm, last, redo;
    uint32_t clog[64];
    unsigned nclog;
} blk_view;

static int blk_view_open(flt_ctx *f, const char *path, uint64_t nblocks, uint32_t ps, blk_view *b) {
    *b = (blk_view){.ps = ps, .nblocks = nblocks, .root = UINT64_MAX};
    b->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (b->fd < 0) return 0;
    b->hwm = atomic_load_explicit(&f->ctl_hwm, memory_order_relaxed);
    b->last = atomic_load_explicit(&f->last_data_block, memory_order_relaxed);
    b->redo = atomic_load_explicit(&f->ctl_redo, memory_order_relaxed);
    uint8_t m[META_CLOG_OFF + 4 * 64];
    if (pread(b->fd, m, sizeof m, 0) == (ssize_t)sizeof m && m[PH_TYPE_OFF] == PAGE_META) {
        b->root = fmt_get32(m + META_OFF_ROOT);
        /* Bytes on disk, damaged maybe by a flip of ours: the count bounds
         * nothing but itself, the buffer bounds the loop. */
        uint32_t n = fmt_get32(m + META_OFF_CLOGN);
        for (uint32_t i = 0; i < n && i < 64; i++) {
            uint32_t c = fmt_get32(m + META_CLOG_OFF + 4 * i);
            if (c && c < nblocks) b->clog[b->nclog++] = c;
        }
    }
    return 1;
}

/* The type class of BLOCK on disk, or -1. */
static int blk_type(const blk_view *b, uint64_t block) {
    uint8_t h[PAGE_HDR];
    if (pread(b->fd, h, sizeof h, (off_t)(block * b->ps)) != (ssize_t)sizeof h) return -1;
    return flt_block_type_class(h, block, b->root);
}

/* 1 if BLOCK's page on disk was changed at or past the redo point (its
 * ph_lsn; an unreadable block is not). */
static int blk_since_redo(const blk_view *b, uint64_t block) {
    uint8_t l[8];
    if (!b->redo || pread(b->fd, l, sizeof l, (off_t)(block * b->ps + PH_LSN_OFF)) != (ssize_t)sizeof l) return 0;
    return fmt_get64(l) >= b->redo;
}

/* A block of class C, or UINT64_MAX when the file has none (a page type,
 * or a page changed since the redo point, is looked for among 16 drawn
 * blocks). */
static uint64_t blk_of_class(flt_ctx *f, flt_thr *t, int cls, const blk_view *b, int c) {
    uint64_t n = b->nblocks;
    switch (c) {
    case FLT_BC_META: return 0;
    case FLT_BC_ROOT: return b->root < n ? b->root : UINT64_MAX;
    case FLT_BC_CLOG: return b->nclog ? b->clog[flt_below(f, t, cls, b->nclog)] : UINT64_MAX;
    case FLT_BC_HWM_BELOW: return b->hwm && b->hwm <= n ? b->hwm - 1 : UINT64_MAX;
    case FLT_BC_HWM_ABOVE: return b->hwm && b->hwm < n ? b->hwm : UINT64_MAX;
    case FLT_BC_LAST_WRITTEN: return b->last && b->last <= n ? b->last - 1 : UINT64_MAX;
    case FLT_BC_FILE_END: return n - 1;
    case FLT_BC_SINCE_REDO:
        for (int k = 0; k < 16; k++) {
            uint64_t blk = flt_below(f, t, cls, n);
            if (blk_since_redo(b, blk)) return blk;
        }
        return UINT64_MAX;
    default:
        for (int k = 0; k < 16; k++) {
            uint64_t blk = flt_below(f, t, cls, n);
            if (blk_type(b, blk) == c) return blk;
        }
        return UINT64_MAX;
    }
}

/* A block of the data file drawn by class, for class CLS's stream: half
 * the draws among the places at the boundary of what is durable
 * (hwm_below, hwm_above, last_written, file_end: a lost or damaged write
 * there must still be told from a page never written), half among the
 * page types (meta, root, interior, leaf, clog, overflow, trunk: each
 * has its own reader, and a uniform draw of a block almost never meets
 * the one meta page or a rare type).  A class the file has no block of
 * is drawn again, up to eight times, then any block.  *BC: the class the
 * block was drawn as (or its type's, -1 for none). */
static uint64_t pick_block_by_class(flt_ctx *f, flt_thr *t, int cls, const blk_view *b, int *bc) {
    for (int k = 0; k < 8; k++) {
        int c = flt_below(f, t, cls, 2)
                    ? FLT_BC_FIRST_BOUNDARY + (int)flt_below(f, t, cls, FLT_BC_COUNT - FLT_BC_FIRST_BOUNDARY)
                    : (int)flt_below(f, t, cls, FLT_BC_FIRST_BOUNDARY);
        uint64_t blk = blk_of_class(f, t, cls, b, c);
        if (blk != UINT64_MAX) {
            *bc = c;
            return blk;
        }
    }
    uint64_t blk = flt_below(f, t, cls, b->nblocks);
    *bc = blk_type(b, blk);
    return blk;
}

/* The type of the page a write OP of BLOCK carries (place.h; the root is
 * the meta page's on disk): the ledger's region of a write that missed
 * its block, so the oracle knows what the block kept old (V6b). */
static const char *written_page_type(const eng_io_op *op, uint64_t block) {
    uint8_t r[4];
    return flt_page_type_name(op->buf, block, read_at(op->path, META_OFF_ROOT, r, 4) ? fmt_get32(r) : UINT64_MAX);
}

/* The class of the data block a write OP is about to put on disk (the
 * ledger's region of a zeroed write): a place at the durable boundary
 * first, else the type of the page written ("unused" for none). */
static const char *written_block_class(flt_ctx *f, const eng_io_op *op, uint64_t block, uint32_t ps) {
    uint64_t hwm = atomic_load_explicit(&f->ctl_hwm, memory_order_relaxed);
    struct stat st;
    if (hwm && block + 1 == hwm) return flt_block_class_name(FLT_BC_HWM_BELOW);
    if (hwm && block == hwm) return flt_block_class_name(FLT_BC_HWM_ABOVE);
    if (stat(op->path, &st) == 0 && op->offset + ps >= (uint64_t)st.st_size)
        return flt_block_class_name(FLT_BC_FILE_END);
    uint64_t redo = atomic_load_explicit(&f->ctl_redo, memory_order_relaxed);
    if (redo && fmt_get64((const uint8_t *)op->buf + PH_LSN_OFF) >= redo)
        return flt_block_class_name(FLT_BC_SINCE_REDO);
    return written_page_type(op, block);
}

static void write_faults(flt_ctx *f, flt_thr *t, eng_io_op *op) {
    uint32_t ps = atomic_load_explicit(&f->page_size, memory_order_relaxed);
    if (!ps || op->len != ps || op->offset % ps != 0) return; /* not a page write: nothing here models a fault of it */
    uint64_t block = op->offset / ps;
    size_t len = op->len;
    char note[96];
    int done = 0;

    if (flt_draw(f, t, FLT_LOST_WRITE) && !done) {
        flt_event e = flt_page_event(f, t, FLT_LOST_WRITE, "hook/write", block, op->offset, len);
        e.region = written_page_type(op, block);
        if (flt_record(f, FLT_LOST_WRITE, &e) == 0) op->skip = 1, done = 1;
    }
    if (flt_draw(f, t, FLT_MISDIRECTED_WRITE) && !done) {
        struct stat st;
        uint64_t nblocks = stat(op->path, &st) == 0 ? (uint64_t)st.st_size / ps : 0;
        uint64_t others = nblocks - (block < nblocks ? 1 : 0);
        if (nblocks && others) {
            uint64_t target = flt_below(f, t, FLT_MISDIRECTED_WRITE, others);
            if (block < nblocks && target >= block) target++;
            flt_event e = flt_page_event(f, t, FLT_MISDIRECTED_WRITE, "hook/write", block, target * ps, len);
            e.region = written_page_type(op, block);
            snprintf(note, sizeof note, "meant for block %llu at offset %llu, written to block %llu",
                     (unsigned long long)block, (unsigned long long)op->offset, (unsigned long long)target);
            e.note = note;
            uint64_t seq;
            if (flt_record_seq(f, FLT_MISDIRECTED_WRITE, &e, &seq) == 0) {
                op->offset = target * ps, done = 1;
                flt_damage_add(f, seq, target * ps, len, 0, op, 0);
            }
        }
    }
    /* A zeroed write is drawn at the class's odds for every block; the
     * blocks at the durable boundary get their share between operations
     * and at the crash (zero_block), drawn by class. */
    if (flt_draw(f, t, FLT_ZERO_PAGE) && !done) {
        void *z = flt_buf_take(t, len);
        if (z) {
            memset(z, 0, len);
            flt_event e = flt_page_event(f, t, FLT_ZERO_PAGE, "hook/write", block, op->offset, len);
            e.region = written_block_class(f, op, block, ps);
            uint64_t seq;
            if (flt_record_seq(f, FLT_ZERO_PAGE, &e, &seq) == 0) {
                op->buf = z, done = 1;
                flt_damage_add(f, seq, op->offset, len, 0, op, 1);
            } else {
                flt_buf_give(t, z);
            }
        }
    }
    if (flt_draw(f, t, FLT_TORN_WRITE) && !done && len >= 2 * SECTOR) {
        size_t sectors = len / SECTOR;
        size_t keep = (1 + (size_t)flt_below(f, t, FLT_TORN_WRITE, sectors - 1)) * SECTOR;
        flt_event e = flt_page_event(f, t, FLT_TORN_WRITE, "hook/write", block, op->offset + keep, len - keep);
        snprintf(note, sizeof note, "wrote %zu of %zu bytes", keep, len);
        e.note = note;
        /* Read before the write: the pool has one write of a page in flight. */
        int differs = file_differs(op->path, op->offset + keep, (const uint8_t *)op->buf + keep, len - keep);
        uint64_t seq;
        if (flt_record_seq(f, FLT_TORN_WRITE, &e, &seq) == 0) {
            op->len = keep, done = 1;
            if (differs) flt_damage_add(f, seq, op->offset + keep, len - keep, 0, op, 0);
        }
    }
    if (flt_draw(f, t, FLT_BITFLIP_INFLIGHT) && !done) {
        uint64_t bit = flt_below(f, t, FLT_BITFLIP_INFLIGHT, (uint64_t)len * 8);
        uint8_t *copy = flt_buf_take(t, len);
        if (copy) {
            memcpy(copy, op->buf, len);
            uint8_t mask = (uint8_t)(1u << (bit % 8));
            flt_event e = flt_page_event(f, t, FLT_BITFLIP_INFLIGHT, "hook/write", block, op->offset, len);
            e.bit = (int64_t)bit;
            e.mask = mask;
            uint64_t seq;
            if (flt_record_seq(f, FLT_BITFLIP_INFLIGHT, &e, &seq) == 0) {
                copy[bit / 8] ^= mask;
                op->buf = copy;
                done = 1;
                flt_damage_add(f, seq, op->offset + bit / 8, 1, mask, op, 0); /* mask: D3 */
            } else {
                flt_buf_give(t, copy);
            }
        }
    }
}

/* A failed fsync: the file's unsynced writes rolled back (with the
 * journal), each drop in the ledger first; counted as sync_error. */
static void drop_dirty(flt_ctx *f, flt_thr *t, const char *path) {
    if (!f->journal) return;
    if (is_data_path(path)) flt_damage_unknown_all(f); /* D4 */
    flt_event d = flt_event_for(f, t, FLT_SYNC_ERROR, "sync/drop_dirty");
    uint64_t n = 0;
    flt_journal_drop_unsynced(f->journal, path, f->ledger, &d, &n);
    atomic_fetch_add_explicit(&f->injected[FLT_SYNC_ERROR], n, memory_order_relaxed);
    /* The failing fsync returns a moment after the kernel dropped the
     * pages, as a real one that waited on the device does: long enough
     * for a concurrent read to see the old contents, which the engine
     * must not return (io.h R1).  Without the pause that window is a few
     * instructions wide and no run would ever test R1. */
    if (n) {
        struct timespec ts = {0, 3 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void maybe_delay(flt_ctx *f, const eng_io_op *op, int after) {
    const char *where = f->o.delay_one_in ? flt_delay_hook_site(op->kind, after) : NULL;
    if (where) flt_delay(f, flt_thr_get(f), where);
}

/* An engine point's failure drawn for this I/O (fiu.c, fault_files):
 * its ledger line and -errno when the file's kind is one of
 * fault_files, else 0 (the I/O goes on). */
static int fire_deferred(flt_ctx *f, flt_thr *t) {
    int cls = t->deferred - 1, err = t->deferred_err;
    t->deferred = 0;
#ifndef ENG_BROKEN_AIM_FAULT_FILES_FAILS_ANY_KIND /* planted harness bug (tests/harness_mutants.txt) */
    if (t->file_off) return 0;
#endif
    flt_event e = flt_event_for(f, t, cls, t->deferred_point);
    e.err = err == ENOSPC ? "ENOSPC" : "EIO";
    if (flt_record(f, cls, &e) != 0) return 0; /* FL1: no line, no fault */
    atomic_fetch_add_explicit(&f->point_hits[t->deferred_idx], 1, memory_order_relaxed);
    flt_delay_fault(f, t);
    return -err;
}

int flt_hook_before(void *ctx, eng_io_op *op) {
    flt_ctx *f = ctx;
    flt_thr *t = NULL;
    maybe_delay(f, op, 0);
    if (f->o.fault_files) { /* for flt_draw, here and in fiu.c's points inside this I/O */
        t = flt_thr_get(f);
        const char *kind = flt_file_kind(f, op);
        if (t) t->file_off = !kind || !flt_list_has(f->o.fault_files, kind);
        int rc = t && t->deferred ? fire_deferred(f, t) : 0;
        if (rc) return rc; /* not issued, so not journaled */
    }
    if (op->kind == ENG_IO_READ || op->kind == ENG_IO_WRITE) {
        /* For the uring points, which fire for this op (or its batch)
         * with no op of their own to look at. */
        t = flt_thr_get(f);
        if (t) t->io_kind = 1 + op->kind;
    }
    int data = is_data_file(f, op);
    if (op->kind == ENG_IO_SYNC) note_wal_sync(f, op, 0); /* paused or not, as the tail */
    if (data && (op->kind == ENG_IO_WRITE || op->kind == ENG_IO_READ))
        learn_page_size(f, op);
    else if (op->kind == ENG_IO_WRITE)
        learn_hwm(f, op);
    if (data && op->kind == ENG_IO_WRITE && f->ncflips) {
        uint32_t ps = atomic_load_explicit(&f->page_size, memory_order_relaxed);
        if (ps) flt_cflip_written(f, op, ps);
    }
    if (!flt_paused(f)) {
        if (data && op->kind == ENG_IO_WRITE) {
            t = flt_thr_get(f);
            write_faults(f, t, op);
        } else if (op->kind == ENG_IO_SYNC) {
            t = flt_thr_get(f);
            if (flt_draw(f, t, FLT_SYNC_ERROR)) {
                if (t && f->fsync_point && flt_below(f, t, FLT_SYNC_ERROR, 2)) {
                    /* The engine's own point fails this fsync in the
                     * kernel's place (fiu.c writes its line); after()
                     * drops the dirty data. */
                    t->sync_fiu = 1;
                    t->sync_path = op->path;
                } else {
                    flt_event e = flt_event_for(f, t, FLT_SYNC_ERROR, "hook/sync");
                    e.file = flt_rel_path(f, op->path);
                    e.err = "EIO";
                    /* Not issued, so not journaled: no after() follows. */
                    if (flt_record(f, FLT_SYNC_ERROR, &e) == 0) {
                        drop_dirty(f, t, op->path);
                        /* The engine hears of the failure late: the
                         * window in which a concurrent read must not
                         * return the dropped data widens. */
                        flt_delay_fault(f, t);
                        return -EIO;
                    }
                }
            }
        }
    }
    if (f->journal) {
        int rc = flt_journal_before(f->journal, op);
        if (rc < 0) {
            /* Not issued after all: no after() will give the buffer back. */
            flt_buf_give(t, op->buf);
            return rc;
        }
    }
    return 0;
}

static void hook_after(void *ctx, eng_io_op *op) {
    flt_ctx *f = ctx;
    if (op->kind == ENG_IO_READ && op->result > 0 && is_data_file(f, op) && !flt_paused(f)) {
        flt_thr *t = flt_thr_get(f);
        if (flt_draw(f, t, FLT_BITFLIP_INFLIGHT)) {
            uint64_t n = (uint64_t)op->result;
            uint64_t bit = flt_below(f, t, FLT_BITFLIP_INFLIGHT, n * 8);
            uint32_t ps = page_size_of(f);
            uint8_t mask = (uint8_t)(1u << (bit % 8));
            flt_event e = flt_event_for(f, t, FLT_BITFLIP_INFLIGHT, "hook/read");
            e.file = "data";
            e.block = ps ? (int64_t)(op->offset / ps) : -1;
            e.offset = (int64_t)op->offset;
            e.len = (int64_t)n;
            e.bit = (int64_t)bit;
            e.mask = mask;
            uint64_t seq;
            if (flt_record_seq(f, FLT_BITFLIP_INFLIGHT, &e, &seq) == 0) {
                ((uint8_t *)op->buf)[bit / 8] ^= mask;
                /* The engine now holds a damaged page, which its read
                 * check must refuse: damage no write can overwrite (an
                 * empty range), present from here on. */
                flt_damage_add(f, seq, UINT64_MAX, 0, 0, NULL, 0);
            }
        }
    }
    if (op->kind == ENG_IO_SYNC) {
        note_wal_sync(f, op, 1);
        flt_thr *t = flt_thr_get(f);
        if (t) {
            int fired = t->sync_fiu_fired;
            t->sync_fiu = t->sync_fiu_fired = 0;                     /* also when the point never ran (paused) */
            if (fired && op->result < 0) drop_dirty(f, t, op->path); /* before the engine hears of the failure */
        }
    }
    if (op->kind == ENG_IO_WRITE && is_data_file(f, op)) {
        if (op->result < 0 && op->issued > 0) note_partial_write(f, op);
        flt_damage_written(f, op);
        uint32_t ps = atomic_load_explicit(&f->page_size, memory_order_relaxed);
        if (op->result > 0 && ps) /* zero_page's last_written */
            atomic_store_explicit(&f->last_data_block, op->offset / ps + 1, memory_order_relaxed);
    } else if ((op->kind == ENG_IO_UNLINK || op->kind == ENG_IO_CREATE) && op->result >= 0 && is_data_path(op->path))
        flt_damage_file_gone(f);
    else if (op->kind == ENG_IO_WRITE && op->result > 0)
        note_wal_tail(f, op);
    if (f->journal) flt_journal_after(f->journal, op);
    if (op->kind == ENG_IO_WRITE && op->buf) flt_buf_give(flt_thr_get(f), op->buf);
    maybe_delay(f, op, 1); /* the engine hears of the completion late */
}

void flt_hooks_init(flt_ctx *f) { f->hooks = (eng_io_hooks){.ctx = f, .before = flt_hook_before, .after = hook_after}; }

/* ---- flt_tick ---- */


/* The on-disk ph_lsn of BLOCK (UINT64_MAX when it cannot be read). */
static uint64_t block_lsn(int fd, uint64_t block, uint32_t ps) {
    uint8_t b[8];
    if (pread(fd, b, sizeof b, (off_t)(block * ps + PH_LSN_OFF)) != (ssize_t)sizeof b) return UINT64_MAX;
    return fmt_get64(b);
}

/* A block for a page flip.  A quarter of the draws are uniform, a
 * quarter by block class (pick_block_by_class: the meta page, the root,
 * a commit-log page ... and the blocks at the durable boundary, which a
 * uniform draw almost never meets), and half take the coldest (lowest
 * on-disk LSN) of COLD_TRIES uniform draws.  A flip on a hot page is
 * mostly masked: the pool writes the page again from its cached copy,
 * or recovery restores it from a full-page image, before anything reads
 * it from disk (five flips in six, measured on small runs).  A cold page
 * keeps the flip until a reader meets it. */
#define COLD_TRIES 8
static uint64_t pick_page_block(flt_ctx *f, flt_thr *t, const char *path, uint64_t nblocks, uint32_t ps) {
    uint64_t how = flt_below(f, t, FLT_BITFLIP_PAGE, 4);
    uint64_t block = flt_below(f, t, FLT_BITFLIP_PAGE, nblocks);
    if (how == 0) return block;
    if (how == 1) {
        blk_view b;
        if (!blk_view_open(f, path, nblocks, ps, &b)) return block;
        int bc;
        block = pick_block_by_class(f, t, FLT_BITFLIP_PAGE, &b, &bc);
        close(b.fd);
        return block;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return block;
    uint64_t best = block_lsn(fd, block, ps);
    for (int i = 1; i < COLD_TRIES; i++) {
        uint64_t b = flt_below(f, t, FLT_BITFLIP_PAGE, nblocks), lsn = block_lsn(fd, b, ps);
        if (lsn < best) best = lsn, block = b;
    }
    close(fd);
    return block;
}

/* A byte of a region [LO, HI) for CLS's flip: one in four on one of the
 * region's two edge bytes (its first or its last: where an off-by-one in
 * a range that a check or a checksum covers hides, in every region
 * alike), the rest uniform inside it. */
static uint64_t pick_in_span(flt_ctx *f, flt_thr *t, int cls, uint64_t lo, uint64_t hi) {
    if (flt_below(f, t, cls, 4) == 0) return flt_below(f, t, cls, 2) ? hi - 1 : lo;
    return lo + flt_below(f, t, cls, hi - lo);
}

/* A bit of page P (PS bytes) for a page flip: a region of the page's own
 * format (place.h: header, hints, slots, free, cells; meta, clog,
 * overflow, trunk) drawn by its size with a floor of PS/8 bytes, so that
 * the 40-byte header or a short slot array is drawn about one flip in
 * ten instead of one in a hundred, then a byte of it (pick_in_span) and
 * a bit of the byte. */
static uint64_t pick_page_bit(flt_ctx *f, flt_thr *t, const uint8_t *p, uint32_t ps) {
    flt_span s[FLT_PAGE_SPANS];
    int n = flt_page_spans(p, ps, s);
    uint64_t w[FLT_PAGE_SPANS], total = 0;
    for (int i = 0; i < n; i++) {
        uint64_t size = s[i].hi - s[i].lo;
        w[i] = size < ps / 8 ? ps / 8 : size;
        total += w[i];
    }
    uint64_t k = flt_below(f, t, FLT_BITFLIP_PAGE, total);
    int i = 0;
    while (i + 1 < n && k >= w[i]) k -= w[i++];
    uint64_t byte = pick_in_span(f, t, FLT_BITFLIP_PAGE, s[i].lo, s[i].hi);
    return byte * 8 + flt_below(f, t, FLT_BITFLIP_PAGE, 8);
}

/* The flip itself, at BLOCK and BIT of PATH: ledger line at POINT (with
 * the region of the page the bit lies in, read from the page as it was
 * right before), damage table, block hashes. */
static void flip_page_bit(flt_ctx *f, flt_thr *t, const char *point, const char *path, uint64_t block, uint64_t bit,
                          uint32_t ps) {
    uint8_t mask = (uint8_t)(1u << (bit % 8));
    flt_event e = flt_page_event(f, t, FLT_BITFLIP_PAGE, point, block, block * ps, ps);
    e.bit = (int64_t)bit;
    e.mask = mask;
    /* The block's hash before and after: a later process (after a crash
     * and the power-loss step) knows the flipped page is still there when
     * the block hashes to "post" (oracle V4b for carried flips).  A write
     * landing between this read and the flip only makes "post" wrong,
     * which claims nothing. */
    uint8_t *pg = malloc(ps);
    if (pg && read_block(path, block, ps, pg)) {
        e.region = flt_page_region_at(pg, ps, bit / 8);
        e.page_pre = XXH64(pg, ps, 0);
        pg[bit / 8] ^= mask;
        e.page_post = XXH64(pg, ps, 0);
    }
    free(pg);
    uint64_t seq;
    if (flt_record_seq(f, FLT_BITFLIP_PAGE, &e, &seq) == 0) {
        /* D1: in the table before the byte changes (a write completing
         * meanwhile marks it gone: over-eager, never wrong). */
        flt_damage_add(f, seq, block * ps + bit / 8, 1, mask, NULL, 0);
        if (flip_file_byte(path, block * ps + bit / 8, mask) != 0) flt_damage_unknown_seq(f, seq);
    }
}

/* The data file's path (into PATH) and page size (into *PS), and its
 * whole blocks: 0 when the page size is unknown or the file has none. */
static uint64_t data_blocks(flt_ctx *f, char path[4200], uint32_t *ps) {
    *ps = page_size_of(f);
    if (!*ps) return 0;
    snprintf(path, 4200, "%s/data", f->db_dir);
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size / *ps : 0;
}

/* One page flip at POINT: a block (pick_page_block), then a bit by the
 * page's format (pick_page_bit).  An unreadable block flips nothing. */
static void flip_page(flt_ctx *f, flt_thr *t, const char *point) {
    char path[4200];
    uint32_t ps;
    uint64_t nblocks = data_blocks(f, path, &ps);
    if (!nblocks) return;
    uint64_t block = pick_page_block(f, t, path, nblocks, ps);
    uint8_t *pg = malloc(ps);
    if (pg && read_block(path, block, ps, pg)) flip_page_bit(f, t, point, path, block, pick_page_bit(f, t, pg, ps), ps);
    free(pg);
}

void flt_flip_page_at(flt_ctx *f, uint64_t block, uint64_t bit) {
    if (!f || !f->db_dir) return;
    char path[4200];
    uint32_t ps;
    flt_door_bypass(1); /* the library's I/O, as flt_tick's */
    if (block < data_blocks(f, path, &ps))
        flip_page_bit(f, flt_thr_get(f), "tick/data", path, block, bit % ((uint64_t)ps * 8), ps);
    flt_door_bypass(0);
}

/* One flip at rest in a page recovery will not restore: its LSN below the
 * redo point of the last control file written (a page changed after it
 * has an image in the log past the point, written by the closing
 * checkpoint itself at times, which the next open replays over any
 * damage).  Drawn as a tick's, up to eight blocks tried. */
static void flip_page_at_rest(flt_ctx *f, flt_thr *t, uint64_t redo) {
    char path[4200];
    uint32_t ps;
    uint64_t nblocks = data_blocks(f, path, &ps);
    uint8_t *pg = nblocks ? malloc(ps) : NULL;
    for (int k = 0; pg && k < 8; k++) {
        uint64_t block = pick_page_block(f, t, path, nblocks, ps);
        if (!read_block(path, block, ps, pg) || fmt_get64(pg + PH_LSN_OFF) >= redo) continue;
        flip_page_bit(f, t, "rest/data", path, block, pick_page_bit(f, t, pg, ps), ps);
        break;
    }
    free(pg);
}

void flt_flip_at_rest(flt_ctx *f, unsigned n) {
    uint64_t redo = f ? atomic_load_explicit(&f->ctl_redo, memory_order_relaxed) : 0;
    if (!f || !f->db_dir || !f->o.one_in[FLT_BITFLIP_PAGE] || !redo) return;
    flt_door_bypass(1); /* the library's I/O, as flt_tick's */
    for (unsigned i = 0; i < n; i++) flip_page_at_rest(f, flt_thr_get(f), redo);
    flt_door_bypass(0);
}

static int cmp_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Flip bit POS of the WAL segment REL (at PATH, SIZE bytes), with its
 * ledger line at POINT (the 4 KiB block around it; REGION; NOTE, if any). */
static void flip_wal_bit(flt_ctx *f, flt_thr *t, const char *point, const char *rel, const char *path, uint64_t size,
                         uint64_t pos, const char *region, const char *note) {
    uint64_t block = pos / 8 / WAL_BLOCK, start = block * WAL_BLOCK;
    uint64_t len = size - start < WAL_BLOCK ? size - start : WAL_BLOCK;
    uint64_t bit = pos - start * 8;
    uint8_t mask = (uint8_t)(1u << (bit % 8));
    flt_event e = flt_event_for(f, t, FLT_BITFLIP_WAL, point);
    e.file = rel;
    e.block = (int64_t)block;
    e.offset = (int64_t)start;
    e.len = (int64_t)len;
    e.bit = (int64_t)bit;
    e.mask = mask;
    e.region = region;
    e.note = note;
    if (flt_record(f, FLT_BITFLIP_WAL, &e) == 0) flip_file_byte(path, start + bit / 8, mask);
}

/* The WAL write bitflip_wal aims at (into REL, *OFF, *LEN), drawn
 * evenly among those known and distinct: the last write of the last
 * synced group, the last write of all (the unsynced tail), and the last
 * write to the segment before the tail's (the edge where a reader crosses
 * into the next file, and where a check that looks for a witness in one
 * file only goes wrong).  0 when no WAL write is known. */
static int wal_aim(flt_ctx *f, flt_thr *t, char rel[24], uint64_t *off, uint64_t *len) {
    struct {
        char name[24];
        uint64_t off, len;
    } c[3];
    int n = 0;
    pthread_mutex_lock(&f->dmg_mu);
    const char *nm[3] = {f->wal_sync_name, f->wal_tail_name, f->wal_edge_name};
    const uint64_t of[3] = {f->wal_sync_off, f->wal_tail_off, f->wal_edge_off};
    const uint64_t ln[3] = {f->wal_sync_len, f->wal_tail_len, f->wal_edge_len};
    for (int i = 0; i < 3; i++) {
        if (!nm[i][0] || !ln[i]) continue;
        int dup = 0;
        for (int j = 0; j < n; j++) dup |= !strcmp(c[j].name, nm[i]) && c[j].off == of[i] && c[j].len == ln[i];
        if (dup) continue;
        memcpy(c[n].name, nm[i], 24);
        c[n].off = of[i], c[n].len = ln[i];
        n++;
    }
    pthread_mutex_unlock(&f->dmg_mu);
    if (!n) return 0;
    int k = n > 1 ? (int)flt_below(f, t, FLT_BITFLIP_WAL, (uint64_t)n) : 0;
    memcpy(rel, c[k].name, 24);
    *off = c[k].off;
    *len = c[k].len;
    return 1;
}

/* A record byte (header or payload) of WAL sector S in [RA, RB), drawn; RB if none. */
static uint64_t wal_record_byte_in_sector(flt_ctx *f, flt_thr *t, const flt_wal_view *v, uint64_t s, uint64_t ra,
                                          uint64_t rb) {
    uint64_t a = s > ra ? s : ra, b = s + WAL_SECTOR < rb ? s + WAL_SECTOR : rb;
    uint64_t h = flt_wal_view_count(v, a, b, FLT_WR_RECORD_HEADER),
             p = flt_wal_view_count(v, a, b, FLT_WR_RECORD_PAYLOAD);
    if (!h && !p) return rb;
    uint64_t k = flt_below(f, t, FLT_BITFLIP_WAL, h + p);
    return k < h ? flt_wal_view_nth(v, a, b, FLT_WR_RECORD_HEADER, k)
                 : flt_wal_view_nth(v, a, b, FLT_WR_RECORD_PAYLOAD, k - h);
}

/* The byte of record [RA, RB) a crash flip hits: a quarter of the time in
 * its last sector (the edge a check walking a record sector by sector
 * misses when it counts the record's end short), else in its header or
 * payload, half and half (its first sector holds the header). */
static uint64_t wal_crash_byte(flt_ctx *f, flt_thr *t, const flt_wal_view *v, uint64_t ra, uint64_t rb, int *edge) {
    *edge = flt_below(f, t, FLT_BITFLIP_WAL, 4) == 0;
    if (*edge) {
        uint64_t pos = wal_record_byte_in_sector(f, t, v, (rb - 1) / WAL_SECTOR * WAL_SECTOR, ra, rb);
        if (pos < rb) return pos;
        *edge = 0;
    }
    int l = flt_below(f, t, FLT_BITFLIP_WAL, 2) ? FLT_WR_RECORD_PAYLOAD : FLT_WR_RECORD_HEADER;
    uint64_t c = flt_wal_view_count(v, ra, rb, l);
    if (!c)
        l = l == FLT_WR_RECORD_HEADER ? FLT_WR_RECORD_PAYLOAD : FLT_WR_RECORD_HEADER,
        c = flt_wal_view_count(v, ra, rb, l);
    return c ? flt_wal_view_nth(v, ra, rb, l, flt_below(f, t, FLT_BITFLIP_WAL, c)) : rb;
}

/* At the crash: a bit inside a record's bytes in the aimed write
 * (wal_aim), never in padding past the log's end.  Half the flips hit
 * the write's last record (the one no later record witnesses: where
 * recovery decides between a torn tail and damage it must report, W3),
 * half any record of it; then a byte of it (wal_crash_byte).  1 if it flipped. */
static int flip_wal_at_crash(flt_ctx *f, flt_thr *t) {
    char rel[24];
    uint64_t off, len;
    if (!wal_aim(f, t, rel, &off, &len)) return 0;
    flt_wal_view v;
    if (!flt_wal_view_load(f->db_dir, rel, off, len, &v)) return 0;
    uint64_t a = off, b = off + len < v.size ? off + len : v.size;
    size_t first = v.nrec, last = 0, n = 0;
    for (size_t i = 0; i < v.nrec; i++)
        if (v.recs[i].end > a && v.recs[i].start < b) {
            if (first == v.nrec) first = i;
            last = i, n++;
        }
    int done = 0;
    if (n) {
        size_t r = flt_below(f, t, FLT_BITFLIP_WAL, 2) ? last : first + (size_t)flt_below(f, t, FLT_BITFLIP_WAL, n);
        uint64_t ra = v.recs[r].start > a ? v.recs[r].start : a, rb = v.recs[r].end < b ? v.recs[r].end : b;
        static const char *const notes[2][2] = {{"at the crash", "at the crash: a record's last sector"},
                                                {"at the crash: the last record of the write",
                                                 "at the crash: the last record of the write, its last sector"}};
        int edge = 0;
        uint64_t pos = ra < rb ? wal_crash_byte(f, t, &v, ra, rb, &edge) : rb;
        if (pos < rb) {
            flip_wal_bit(f, t, "crash/wal", v.rel, v.path, v.size, pos * 8 + flt_below(f, t, FLT_BITFLIP_WAL, 8),
                         flt_wal_region_name(v.lab[pos - v.lo]), notes[r == last][edge]);
            done = 1;
        }
    }
    flt_wal_view_free(&v);
    return done;
}

/* zero_page on disk: a block drawn by class (pick_block_by_class: half
 * at the boundary of what is durable, half by page type) reads back all
 * zero, as if its last write had been lost as zeros.  Below the
 * high-water mark the zero-page rule must report it (P5) when the engine
 * reads it from disk; only a full-page image (recovery's, or a write of
 * the page from the cache) may bring it back.  At the crash (POINT
 * crash/data) nothing of the dead process writes the block again;
 * between operations (tick/data) it is damage in the table (D1, D8)
 * until a write of the block.  The ledger line carries the block's class
 * (region) and hashes (pre, post: all zero) for V4b after a crash; an
 * all-zero block is left alone (no damage, no line), and up to four
 * blocks are drawn for one that is not. */
static void zero_block(flt_ctx *f, flt_thr *t, const char *point, const char *note) {
    char path[4200];
    uint32_t ps;
    uint64_t nblocks = data_blocks(f, path, &ps);
    if (!nblocks) return;
    blk_view b;
    uint8_t *pg = calloc(2, ps);
    if (!pg || !blk_view_open(f, path, nblocks, ps, &b)) {
        free(pg);
        return;
    }
    for (int k = 0; k < 4; k++) {
        int bc;
        uint64_t block = pick_block_by_class(f, t, FLT_ZERO_PAGE, &b, &bc);
        if (pread(b.fd, pg, ps, (off_t)(block * ps)) != (ssize_t)ps || memcmp(pg, pg + ps, ps) == 0) continue;
        flt_event e = flt_page_event(f, t, FLT_ZERO_PAGE, point, block, block * ps, ps);
        e.region = bc >= 0 ? flt_block_class_name(bc) : "unused";
        e.note = note;
        e.page_pre = XXH64(pg, ps, 0);
        e.page_post = XXH64(pg + ps, ps, 0);
        uint64_t seq;
        if (flt_record_seq(f, FLT_ZERO_PAGE, &e, &seq) == 0) {
            /* D1: in the table before the bytes change. */
#ifndef ENG_BROKEN_AIM_ZERO_TICK_NOT_IN_DAMAGE_TABLE /* planted harness bug (tests/harness_mutants.txt) */
            flt_damage_add(f, seq, block * ps, ps, 0, NULL, 1);
#endif
            int fd = open(path, O_WRONLY | O_CLOEXEC);
            /* A short write leaves the block hashing to neither "pre"
             * nor "post": V4b then claims nothing of it. */
            ssize_t w = fd >= 0 ? pwrite(fd, pg + ps, ps, (off_t)(block * ps)) : -1;
            if (w != (ssize_t)ps) flt_damage_unknown_seq(f, seq);
            if (fd >= 0) close(fd);
        }
        break;
    }
    close(b.fd);
    free(pg);
}

/* bitflip_page in the control file at the crash (CONTROL_FLIP_ONE_IN of
 * the kills that flip a page): one bit of its CONTROL_SIZE bytes, all of
 * which its checksum covers, so the next open must report it (or, after a
 * power loss that brought the previous file back, meet none of it).  The
 * ledger line carries the file's hashes before and after (V4b); the
 * process dies next, so no damage-table entry is needed. */
#define CONTROL_FLIP_ONE_IN 4
static void flip_control(flt_ctx *f, flt_thr *t) {
    char path[4200];
    uint8_t c[CONTROL_SIZE];
    snprintf(path, sizeof path, "%s/%s", f->db_dir, CONTROL_NAME);
    if (!read_block(path, 0, CONTROL_SIZE, c)) return; /* another engine's files, or none yet */
    uint64_t bit = flt_below(f, t, FLT_BITFLIP_PAGE, CONTROL_SIZE * 8);
    flt_event e = flt_page_event(f, t, FLT_BITFLIP_PAGE, "crash/control", 0, 0, CONTROL_SIZE);
    e.file = CONTROL_NAME;
    e.region = "control";
    e.bit = (int64_t)bit;
    e.mask = (uint8_t)(1u << (bit % 8));
    e.note = "at the crash: the control file";
    e.page_pre = XXH64(c, CONTROL_SIZE, 0);
    c[bit / 8] ^= (uint8_t)e.mask;
    e.page_post = XXH64(c, CONTROL_SIZE, 0);
    if (flt_record(f, FLT_BITFLIP_PAGE, &e) == 0) flip_file_byte(path, bit / 8, (uint8_t)e.mask);
}

void flt_flip_at_crash(flt_ctx *f, flt_thr *t) {
    if (!f->db_dir) return;
    if (f->o.one_in[FLT_ZERO_PAGE] && flt_below(f, t, FLT_ZERO_PAGE, 2) == 0)
        zero_block(f, t, "crash/data", "at the crash: the block reads back all zero");
    /* A quarter of the WAL's crash damage a synced sector lost as zeros
     * (walzero.c), when one qualifies; else a flipped bit. */
    if (f->o.one_in[FLT_BITFLIP_WAL] && !(flt_below(f, t, FLT_BITFLIP_WAL, 4) == 0 && flt_wal_zero_at_crash(f, t)))
        flip_wal_at_crash(f, t);
    /* A page flipped at the crash is judged after recovery, with nothing
     * of this process left to write the page again: only a full-page
     * image after the redo point may mask it (the ledger's block hashes
     * tell).  Placed as a tick's is, by the page's format. */
    if (f->o.one_in[FLT_BITFLIP_PAGE]) flip_page(f, t, "crash/data");
    if (f->o.one_in[FLT_BITFLIP_PAGE] && flt_below(f, t, FLT_BITFLIP_PAGE, CONTROL_FLIP_ONE_IN) == 0)
        flip_control(f, t);
}

/* A tick's WAL flip inside the 4 KiB block at BLK of REL: a region of
 * the block by the format (place.h: block_header, sector_trailer,
 * record_header, record_payload, padding) drawn by its size with a floor
 * of 256 bytes (a block's 32 header bytes and 32 trailer bytes are drawn
 * about one flip in ten each), then a byte of it. */
static void flip_wal_block(flt_ctx *f, flt_thr *t, const char *rel, uint64_t blk) {
    flt_wal_view v;
    if (!flt_wal_view_load(f->db_dir, rel, blk, WAL_BLOCK, &v)) return;
    uint64_t a = blk, b = blk + WAL_BLOCK < v.size ? blk + WAL_BLOCK : v.size;
    if (a < b) {
        uint64_t cnt[FLT_WR_COUNT], w[FLT_WR_COUNT], total = 0;
        for (int l = 0; l < FLT_WR_COUNT; l++) {
            cnt[l] = flt_wal_view_count(&v, a, b, l);
            w[l] = cnt[l] ? (cnt[l] < 256 ? 256 : cnt[l]) : 0;
            total += w[l];
        }
        uint64_t k = flt_below(f, t, FLT_BITFLIP_WAL, total);
        int l = 0;
        while (l + 1 < FLT_WR_COUNT && k >= w[l]) k -= w[l++];
        uint64_t pos = flt_wal_view_nth(&v, a, b, l, flt_below(f, t, FLT_BITFLIP_WAL, cnt[l]));
        flip_wal_bit(f, t, "tick/wal", v.rel, v.path, v.size, pos * 8 + flt_below(f, t, FLT_BITFLIP_WAL, 8),
                     flt_wal_region_name(l), NULL);
    }
    flt_wal_view_free(&v);
}

static void tick_wal(flt_ctx *f, flt_thr *t) {
    /* Half the flips land in a block of the aimed write (wal_aim: the end
     * of the last synced group or the unsynced tail), where recovery
     * decides between a torn tail it may trim and damage to synced
     * records it must report (W3); uniform draws over whole segments
     * almost never reach it. */
    char rel[24];
    uint64_t off, len;
    if (flt_below(f, t, FLT_BITFLIP_WAL, 2) == 0 && wal_aim(f, t, rel, &off, &len)) {
        uint64_t b0 = off / WAL_BLOCK, b1 = (off + len + WAL_BLOCK - 1) / WAL_BLOCK;
        flip_wal_block(f, t, rel, (b0 + flt_below(f, t, FLT_BITFLIP_WAL, b1 - b0)) * WAL_BLOCK);
        return;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/wal", f->db_dir);
    DIR *d = opendir(dir);
    if (!d) return;
    /* Sorted, so the choice does not depend on the directory's order. */
    char(*names)[17] = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!flt_is_segment_name(de->d_name)) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            char(*nn)[17] = realloc(names, nc * sizeof *nn);
            if (!nn) break;
            names = nn, cap = nc;
        }
        memcpy(names[n++], de->d_name, 17);
    }
    closedir(d);
    /* Empty segments have nothing to flip: leave them out of the choice. */
    uint64_t *sizes = n ? malloc(n * sizeof *sizes) : NULL;
    size_t m = 0;
    char path[4300];
    if (n) qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n && sizes; i++) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            memmove(names[m], names[i], 17);
            sizes[m++] = (uint64_t)st.st_size;
        }
    }
    if (m) {
        size_t s = (size_t)flt_below(f, t, FLT_BITFLIP_WAL, m);
        snprintf(rel, sizeof rel, "wal/%s", names[s]);
        flip_wal_block(f, t, rel, flt_below(f, t, FLT_BITFLIP_WAL, (sizes[s] + WAL_BLOCK - 1) / WAL_BLOCK) * WAL_BLOCK);
    }
    free(sizes);
    free(names);
}

/* A runtime page flip. */
static void tick_page(flt_ctx *f, flt_thr *t) { flip_page(f, t, "tick/data"); }

/* The ticks' and pins' reads and writes of the database's files are the
 * library's, not the engine's: the door (door.h) must pass them to libc,
 * neither hooked (a read fault on them) nor journaled (a flip power loss
 * could undo). */
void flt_tick(flt_ctx *f, eng_db *db) {
    if (!f || flt_paused(f)) return;
    flt_door_bypass(1);
    flt_thr *t = flt_thr_get(f);
    if (db && flt_draw(f, t, FLT_BITFLIP_CACHE)) flt_tick_cache(f, t, db);
    if (flt_door_disk(f)) { /* another engine's files: no page format (doordisk.c) */
        flt_door_disk_tick(f, t);
        flt_door_bypass(0);
        return;
    }
    if (flt_draw(f, t, FLT_BITFLIP_PAGE)) tick_page(f, t);
    if (flt_draw(f, t, FLT_BITFLIP_WAL)) tick_wal(f, t);
    if (flt_draw(f, t, FLT_ZERO_PAGE))
        zero_block(f, t, "tick/data", "between operations: the block reads back all zero (a write lost as zeros)");
    flt_door_bypass(0);
}
