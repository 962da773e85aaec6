/*
 * wal.c -- the write-ahead log of wal.h, its appending side: log buffer,
 * block framing, write-out, group commit, segment files, recycling and
 * archiving.  The reader that decides where the log ends (W3) is
 * walread.c; geometry, trailers, block headers and segment listing are
 * walseg.c (wal_int.h).
 *
 * The byte layout of blocks and records is drawn in format.h, the rules
 * W1-W4 in wal.h; this file only adds how the writer keeps them.
 *
 * Writer
 * ------
 * The log buffer mirrors the stream from a block-aligned LSN (buf_lsn):
 *
 *     buf_lsn      written_full        blk(ins)   ins
 *        |  written   |  full, not written  | partial |  zero ...  |
 *        +------------+---------------------+---------+------------+
 *        0                                                    buf_cap
 *
 * Three locks, always taken in this order (never the other way round):
 *   flush_mu  the group-commit token (one syncing flusher at a time) and
 *             its condvar; never held across I/O
 *   ins_mu    the insert lock: ins, prev_rec, the bytes at and after ins
 *   write_mu  everything that writes: written_full/written_lsn, the segment
 *             table, the headers of blocks being written, and moving or
 *             growing the buffer (which also needs ins_mu)
 * An appender copies bytes under ins_mu only.  When the buffer is full it
 * also takes write_mu, writes the full blocks out and slides the partial
 * block to the front.  A flusher snapshots ins and copies the partial last
 * block (zero-padded past ins) under ins_mu, then writes under write_mu,
 * then fsyncs outside every lock (so appends and buffer-full write-outs go
 * on during the fsync) and publishes durable_lsn.  Blocks below blk(ins)
 * are never touched by appenders, which is why the flusher may read them
 * under write_mu alone.
 *
 * Invariants:
 *   B1  buf_lsn <= written_full <= blk(ins); every block below written_full
 *       was written whole; everything below written_lsn was written.
 *   B2  bytes of the buffer at and after ins are zero (padding and the
 *       unwritten tail of the partial block are zero on disk, W1).
 *   B3  a block's wb_durable is the durable_lsn published when it is
 *       written: durable_lsn is published only after every write below it
 *       completed and was fsynced (W2), so a witness never overstates.
 *   B4  durable_lsn <= written_lsn <= ins, all three only grow.
 *   B5  every sector written holds its own check (wb_seal, at every write
 *       of its block) or is zero throughout: the partial block is sealed
 *       in its staged copy, full blocks in the buffer just before their
 *       one write, so no sector reaches the disk with a stale trailer.
 */
#include "faultpoints.h"
#include "lockorder.h"
#include "wal_int.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

/* Spare segments kept for recycling: enough to absorb the segments one
 * checkpoint frees without the directory filling with stale files. */
#define WAL_MAX_SPARES 2

/* Archive copies go through a bounce buffer of this size. */
#define ARCHIVE_CHUNK (1u << 20)

/* ============================================================================
 * Writer
 * ========================================================================== */

/* One open segment file.  It stays open while it is the current segment,
 * while it holds writes not yet fsynced (dirty), and while a flusher is
 * fsyncing it outside write_mu (pins). */
typedef struct wal_seg {
    uint64_t base;
    int dirty;
    int pins;
    io_file f;
} wal_seg;

struct wal {
    io_ctx *io;
    char *dir, *waldir, *archive_dir;
    uint64_t seg_size;
    uint32_t gen;
    eng_reporter rep;

    /* group commit */
    pthread_mutex_t flush_mu;
    pthread_cond_t flush_cv;
    int flushing;

    /* insert lock */
    pthread_mutex_t ins_mu;
    uint64_t ins;      /* next free stream position (8-aligned) */
    uint64_t prev_rec; /* LSN of the last record appended */
    XXH3_state_t *xs;  /* record checksum state, used under ins_mu */
    uint8_t *buf;      /* buf/buf_cap/buf_lsn change only under both locks */
    size_t buf_cap;
    uint64_t buf_lsn;

    /* write lock */
    pthread_mutex_t write_mu;
    uint64_t written_full, written_lsn;
    uint64_t cur_seg; /* segment of the last block written: kept open */
    wal_seg **segs;
    size_t nsegs, segs_cap;
    wal_seg **sync_set; /* the syncing flusher's pinned segments */
    size_t sync_cap;
    int need_dirsync; /* a segment was created since the last sync */
    io_req *reqs;
    size_t reqs_cap;

    _Atomic uint64_t insert_lsn, durable_lsn;
    atomic_int poisoned;

    _Atomic uint64_t st_bytes_appended, st_bytes_written, st_records, st_syncs, st_segments_created,
        st_segments_recycled, st_segments_removed, st_archive_bytes, st_segments_archived;
};

static inline void stat_add(_Atomic uint64_t *s, uint64_t v) { atomic_fetch_add_explicit(s, v, memory_order_relaxed); }

/* The three locks, in their order (drawn above).  Debug builds keep the
 * ones this thread holds and check that it takes a lock only while it
 * holds none later in the order. */
enum { LK_FLUSH = 1, LK_INS = 2, LK_WRITE = 4 };
static __thread unsigned locks_held; /* lockorder.h */

/* W4: after a failed write or fsync the kernel may have dropped dirty pages
 * that the log claims, so nothing may be appended or made "durable" again
 * in this handle. */
static void wal_poison(wal *w) { atomic_store(&w->poisoned, 1); }

static inline int is_poisoned(wal *w) { return atomic_load(&w->poisoned) != 0; }

/* ---- segment table (write_mu held) ----------------------------------------- */

/* The open segment for BASE, opened (and created if missing) on first use.
 * A creation is remembered so the next sync also fsyncs the directory:
 * a segment whose name is lost loses its data however well it was synced. */
static int seg_get(wal *w, uint64_t base, wal_seg **out) {
    for (size_t i = 0; i < w->nsegs; i++)
        if (w->segs[i]->base == base) {
            *out = w->segs[i];
            return ENG_OK;
        }
    if (w->nsegs == w->segs_cap) {
        size_t ncap = w->segs_cap ? 2 * w->segs_cap : 8;
        wal_seg **n = realloc(w->segs, ncap * sizeof *n);
        if (!n) return ENG_NOMEM;
        w->segs = n;
        w->segs_cap = ncap;
    }
    wal_seg *s = calloc(1, sizeof *s);
    if (!s) return ENG_NOMEM;
    s->base = base;
    char name[17];
    seg_name(name, base);
    int id = seg_file_id(w->seg_size, base);
    /* Open first: recycled spares and the segment being continued after a
     * reopen exist already, and only a real creation needs a dirsync. */
    int rc = io_open(w->io, w->waldir, name, id, 0, 0, &s->f);
    if (rc != ENG_OK) {
        rc = io_open(w->io, w->waldir, name, id, 1, 0, &s->f);
        if (rc != ENG_OK) {
            free(s);
            return rc;
        }
        w->need_dirsync = 1;
        stat_add(&w->st_segments_created, 1);
    }
    w->segs[w->nsegs++] = s;
    *out = s;
    return ENG_OK;
}

static void seg_drop(wal *w, size_t i) {
    io_close(w->io, &w->segs[i]->f);
    free(w->segs[i]);
    w->segs[i] = w->segs[--w->nsegs];
}

/* Close segments nobody needs open: synced, not being synced, not current. */
static void seg_cleanup(wal *w) {
    for (size_t i = 0; i < w->nsegs;) {
        wal_seg *s = w->segs[i];
        if (!s->dirty && !s->pins && s->base != w->cur_seg)
            seg_drop(w, i);
        else
            i++;
    }
}

/* ---- writing blocks (write_mu held) ------------------------------------------ */

/* Write the buffer's blocks [FROM, TO) and, if STAGE, the partial block
 * STAGE at TO, holding STAGE_LEN bytes (zero after): one request per contiguous run per segment, submitted as
 * one batch, no fsync.  Each header gets the witness first (B3).  A failed
 * write poisons the log (W4); failing to open a segment does not, since
 * nothing was written. */
static int wr_blocks(wal *w, uint64_t from, uint64_t to, uint8_t *stage, uint32_t stage_len) {
#ifdef ENG_BROKEN_WITNESS_COUNTS_WRITTEN_AS_DURABLE
    /* planted bug (tests/mutants.txt): the witness is what was written
     * so far, not what was fsynced (B3 broken): a block written after an
     * unsynced write-out (a full buffer) claims that write durable, and a
     * power loss that rolls it back leaves a torn tail that W3b takes for
     * damage (the database does not reopen). */
    uint64_t durable = w->written_lsn;
#else
    uint64_t durable = atomic_load(&w->durable_lsn);
#endif
    uint64_t mask = w->seg_size - 1;
    size_t n = 0;
    uint64_t bytes = 0;
    /* B1: whole blocks of the buffer, from the first not yet written */
    assert(blk_off(from) == 0 && blk_off(to) == 0 && from <= to && from == w->written_full);
    assert(from >= w->buf_lsn && to - w->buf_lsn <= w->buf_cap);
    assert(durable <= w->written_lsn); /* B3, B4: a witness never passes what was written */

    for (uint64_t b = from; b < to; b += WAL_BLOCK) wal_wb_seal(w->buf + (b - w->buf_lsn), durable, WAL_BLOCK_SECTORS);
    if (stage) wal_wb_seal(stage, durable, (stage_len + WAL_SECTOR - 1) / WAL_SECTOR);

    for (uint64_t a = from; a < to || (stage && a == to);) {
        uint64_t seg = a & ~mask;
        wal_seg *s;
        int rc = seg_get(w, seg, &s);
        if (rc != ENG_OK) return rc;
        assert(n < w->reqs_cap); /* reqs_needed: a run per segment, the stage, slack */
        io_req *r = &w->reqs[n++];
        if (a < to) {
            uint64_t e = min64(seg + w->seg_size, to);
            *r = (io_req){.f = &s->f, .buf = w->buf + (a - w->buf_lsn), .len = e - a, .offset = a - seg};
            a = e;
        } else {
            *r = (io_req){.f = &s->f, .buf = stage, .len = WAL_BLOCK, .offset = a - seg};
            a += WAL_BLOCK;
        }
        bytes += r->len;
    }
    if (n == 0) return ENG_OK;
    int rc = io_write_batch(w->io, w->reqs, n);
#ifdef ENG_BROKEN_WAL_WRITE_ERROR_ONLY_POISONS
    /* planted bug (tests/mutants.txt): a failed write poisons the log (W4)
     * and is taken as dealt with: the caller is told the blocks were
     * written, so the flush that wrote them fsyncs the rest and publishes
     * them durable (their commits acknowledged, never on disk), and a
     * buffer-full write-out slides them out of the buffer for good; only
     * the next append or flush says ENG_POISONED. */
    if (rc != ENG_OK) wal_poison(w);
#else
    if (rc != ENG_OK) {
        wal_poison(w);
        return rc;
    }
#endif
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < w->nsegs; j++)
            if (&w->segs[j]->f == w->reqs[i].f) {
                w->segs[j]->dirty = 1;
                break;
            }
    w->cur_seg = (stage ? to : to - WAL_BLOCK) & ~mask;
    stat_add(&w->st_bytes_written, bytes);
    return ENG_OK;
}

/* Requests one write can need: a run per segment the buffer can span, the
 * staged partial block, and slack for a run cut at each end. */
static size_t reqs_needed(size_t buf_cap, uint64_t seg_size) { return (size_t)(buf_cap / seg_size) + 3; }

/* ---- appending ------------------------------------------------------------------ */

/* Make the buffer reach END_RAW (ins_mu held): write the full blocks out,
 * slide the partial block to the front, and grow the buffer only when one
 * record is larger than all of it. */
static int make_room(wal *w, uint64_t end_raw) {
    if (end_raw - w->buf_lsn <= w->buf_cap) return ENG_OK;
    lock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    int rc = ENG_OK;
    uint64_t ib = blk_of(w->ins);
    assert(w->buf_lsn <= w->written_full && w->written_full <= ib); /* B1 (both locks held) */
    if (w->written_full < ib) {
        rc = wr_blocks(w, w->written_full, ib, NULL, 0);
        if (rc == ENG_OK) {
            w->written_full = ib;
            if (w->written_lsn < ib) w->written_lsn = ib;
        }
    }
    if (rc == ENG_OK && ib != w->buf_lsn) {
        size_t keep = (size_t)(w->ins - ib);
        memmove(w->buf, w->buf + (ib - w->buf_lsn), keep);
        memset(w->buf + keep, 0, w->buf_cap - keep); /* B2 */
        w->buf_lsn = ib;
    }
    if (rc == ENG_OK && end_raw - w->buf_lsn > w->buf_cap) {
        size_t ncap = w->buf_cap;
        while (ncap < end_raw - w->buf_lsn) ncap *= 2;
        size_t nreq = reqs_needed(ncap, w->seg_size);
        uint8_t *nb = realloc(w->buf, ncap);
        io_req *nr = nb ? realloc(w->reqs, nreq * sizeof *nr) : NULL;
        if (nb) w->buf = nb;
        if (!nb || !nr) {
            rc = ENG_NOMEM;
        } else {
            memset(nb + w->buf_cap, 0, ncap - w->buf_cap);
            w->buf_cap = ncap;
            w->reqs = nr;
            w->reqs_cap = nreq;
        }
    }
    unlock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    return rc;
}

/* Copy N record bytes from SRC to stream position *POS, skipping sector
 * trailers, and starting each block entered with a header whose wb_cont
 * is the record bytes still to come (*LEFT), capped at the payload size. */
static void buf_put(wal *w, uint64_t *pos, const uint8_t *src, size_t n, uint64_t *left) {
    uint64_t p = *pos;
    while (n > 0) {
        uint32_t so = sec_off(p);
        if (so >= WAL_SECTOR_DATA) {
            p += WAL_SECTOR - so; /* the trailer, filled by wal_wb_seal */
            continue;
        }
        if (blk_off(p) == 0) {
            wal_wb_init(w->buf + (p - w->buf_lsn), p, w->gen, (uint16_t)min64(*left, WB_PAYLOAD));
            p += WAL_BLOCK_HDR;
        }
        size_t c = WAL_SECTOR_DATA - sec_off(p);
        if (c > n) c = n;
        memcpy(w->buf + (p - w->buf_lsn), src, c);
        p += c;
        src += c;
        n -= c;
        *left -= c;
    }
    *pos = p;
}

int wal_append(wal *w, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end) {
    if (type < 1 || type > WAL_REC_TYPE_MAX || len > WAL_MAX_RECORD || (len && !payload)) return ENG_INVALID;
    if (is_poisoned(w)) return ENG_POISONED;
    int injected = ENG_FAULT(FP_WAL_APPEND);
    if (injected) {
        wal_poison(w); /* as a failed write of the buffer would */
        return io_status_from_errno(injected);
    }
    uint64_t total = WAL_REC_HDR + len;

    lock_in_order(&locks_held, &w->ins_mu, LK_INS);
    if (is_poisoned(w)) {
        unlock_in_order(&locks_held, &w->ins_mu, LK_INS);
        return ENG_POISONED;
    }
    uint64_t pos = w->ins;
    uint64_t lsn = rec_start_at(pos);
    uint64_t end_raw = stream_end(lsn, total);
    /* records chain backwards (xl_prev) and start where one may */
    assert(valid_stream_pos(pos) && w->prev_rec < lsn);
    int rc = make_room(w, end_raw);
    if (rc != ENG_OK) {
        unlock_in_order(&locks_held, &w->ins_mu, LK_INS);
        return rc;
    }

    uint8_t hdr[WAL_REC_HDR];
    fmt_put32(hdr + XL_LEN_OFF, (uint32_t)total);
    hdr[XL_TYPE_OFF] = (uint8_t)type;
    hdr[XL_FLAGS_OFF] = 0;
    fmt_put16(hdr + XL_RESERVED_OFF, 0);
    fmt_put64(hdr + XL_PREV_OFF, w->prev_rec);
    fmt_put64(hdr + XL_LSN_OFF, lsn);
    fmt_put64(hdr + XL_CHECK_OFF, 0);
    /* A record inside one block is contiguous in the buffer and is hashed
     * there in one shot (the common, small case); one that spans blocks
     * is hashed from its pieces before they are scattered. */
    int one_block = end_raw - lsn == total;
    if (!one_block) {
        XXH3_64bits_reset(w->xs);
        XXH3_64bits_update(w->xs, hdr, sizeof hdr);
        if (len) XXH3_64bits_update(w->xs, payload, len);
        fmt_put64(hdr + XL_CHECK_OFF, XXH3_64bits_digest(w->xs));
    }

    if (pos != lsn) /* the record opens a block: nothing continues into it */
        wal_wb_init(w->buf + (pos - w->buf_lsn), pos, w->gen, 0);
    uint64_t p = lsn, left = total;
    buf_put(w, &p, hdr, sizeof hdr, &left);
    buf_put(w, &p, payload, len, &left);
    if (one_block) {
        uint8_t *rec = w->buf + (lsn - w->buf_lsn);
        fmt_put64(rec + XL_CHECK_OFF, XXH3_64bits(rec, (size_t)total));
    }
    /* B4: the insert position only grows */
    assert(align8(end_raw) > pos);
    w->ins = align8(end_raw); /* padding is already zero (B2) */
    w->prev_rec = lsn;
    atomic_store(&w->insert_lsn, w->ins);
    uint64_t e = w->ins;
    unlock_in_order(&locks_held, &w->ins_mu, LK_INS);

    stat_add(&w->st_records, 1);
    stat_add(&w->st_bytes_appended, total);
    if (start) *start = lsn;
    if (end) *end = e;
    return ENG_OK;
}

/* ---- write-out and group commit ------------------------------------------------- */

/* Write everything appended so far (the partial last block from a
 * zero-padded copy, W1) and, with SYNC, fsync every segment written since
 * the last sync (all writes completed first, W2) and publish durable_lsn.
 * With SYNC the caller holds the group-commit token.  A snapshot already
 * written by a later write-out is not written again: writing an older copy
 * of the partial block over a newer one would lose bytes. */
static int write_snapshot(wal *w, int sync) {
    _Alignas(64) uint8_t stage[WAL_BLOCK];

    lock_in_order(&locks_held, &w->ins_mu, LK_INS);
    uint64_t S = w->ins, Sb = blk_of(S);
    uint32_t off = blk_off(S);
    if (off) {
        memcpy(stage, w->buf + (Sb - w->buf_lsn), off);
        memset(stage + off, 0, WAL_BLOCK - off);
    }
    unlock_in_order(&locks_held, &w->ins_mu, LK_INS);

    lock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    int rc = ENG_OK;
    assert(!sync || w->flushing); /* with SYNC, this thread holds the group-commit token */
    if (S > w->written_lsn) {
        /* S > written_lsn >= written_full, so Sb >= written_full (B1). */
        rc = wr_blocks(w, w->written_full, Sb, off ? stage : NULL, off);
        if (rc == ENG_OK) {
            w->written_full = Sb;
            w->written_lsn = S;
        }
    }
    /* B1, B4: written_full <= written_lsn, and S is written unless it failed */
    assert(w->written_full <= w->written_lsn && (rc != ENG_OK || S <= w->written_lsn));
    size_t nsync = 0;
    int dirsync = 0;
    if (sync && rc == ENG_OK) {
        if (w->sync_cap < w->nsegs) {
            wal_seg **n = realloc(w->sync_set, w->nsegs * sizeof *n);
            if (!n)
                rc = ENG_NOMEM;
            else {
                w->sync_set = n;
                w->sync_cap = w->nsegs;
            }
        }
        for (size_t i = 0; rc == ENG_OK && i < w->nsegs; i++) {
            wal_seg *s = w->segs[i];
#ifdef ENG_BROKEN_WAL_SYNC_CURRENT_SEGMENT_ONLY
            /* planted bug (tests/mutants.txt): only the segment being
             * written is fsynced: when a group crosses into a new segment,
             * the old one's last writes are never synced, yet durable_lsn
             * covers them and their commits are acknowledged. */
            if (s->dirty && s->base == w->cur_seg) {
#else
            if (s->dirty) {
#endif
                s->dirty = 0;
                s->pins++;
                w->sync_set[nsync++] = s;
            }
        }
        if (rc == ENG_OK) {
            dirsync = w->need_dirsync;
            w->need_dirsync = 0;
        }
    }
    unlock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    if (!sync || rc != ENG_OK) return rc;

    ENG_KILL_POINT(FP_KILL_WAL_WRITE_SYNC);
    ENG_DELAY_POINT(FP_DELAY_WAL_BEFORE_SYNC);
    /* Outside the locks: appenders go on, and a buffer-full write-out may
     * land in a segment being synced; it is not claimed by this flush. */
    for (size_t i = 0; i < nsync && rc == ENG_OK; i++) {
        rc = io_datasync(w->io, &w->sync_set[i]->f);
        if (rc == ENG_OK) stat_add(&w->st_syncs, 1);
    }
    if (rc == ENG_OK && dirsync) rc = io_dirsync(w->io, w->waldir);
    if (rc != ENG_OK) wal_poison(w); /* never retried (W4) */

    lock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    for (size_t i = 0; i < nsync; i++) {
        assert(w->sync_set[i]->pins > 0); /* pinned above, for this fsync */
        w->sync_set[i]->pins--;
    }
    seg_cleanup(w);
    unlock_in_order(&locks_held, &w->write_mu, LK_WRITE);

    if (rc == ENG_OK) ENG_KILL_POINT(FP_KILL_WAL_SYNC);
    if (rc == ENG_OK) ENG_DELAY_POINT(FP_DELAY_WAL_BEFORE_PUBLISH);
#ifdef ENG_BROKEN_DURABLE_PUBLISHES_INSERT
    /* planted bug (tests/mutants.txt): the flusher publishes the insert
     * position as it is after the fsync, not the snapshot S it wrote and
     * synced: records appended during the fsync count as durable, so their
     * committers return without an fsync of their own (and later witnesses
     * overstate, B3). */
    S = atomic_load(&w->insert_lsn);
#endif
    /* B4: durable_lsn <= written_lsn <= ins; S was written (above) */
    assert(rc != ENG_OK || S <= atomic_load(&w->insert_lsn));
    if (rc == ENG_OK && S > atomic_load(&w->durable_lsn))
        atomic_store(&w->durable_lsn, S); /* only the token holder publishes */
    return rc;
}

int wal_flush(wal *w, uint64_t upto) {
    if (is_poisoned(w)) return ENG_POISONED;
    uint64_t ins = atomic_load(&w->insert_lsn);
    if (upto > ins) upto = ins; /* records not yet appended cannot be made durable */
    if (atomic_load(&w->durable_lsn) >= upto) return ENG_OK;

    lock_in_order(&locks_held, &w->flush_mu, LK_FLUSH);
    for (;;) {
        if (is_poisoned(w)) {
            unlock_in_order(&locks_held, &w->flush_mu, LK_FLUSH);
            return ENG_POISONED;
        }
        if (atomic_load(&w->durable_lsn) >= upto) {
            unlock_in_order(&locks_held, &w->flush_mu, LK_FLUSH); /* a flusher's fsync covered us */
            return ENG_OK;
        }
        if (!w->flushing) break;
#ifdef ENG_BROKEN_FLUSH_WAITER_TRUSTS_RUNNING_FSYNC
        /* planted bug (tests/mutants.txt): the flush in progress is taken
         * to cover this caller, but its snapshot of the log was taken
         * before this caller's records were appended: the caller returns
         * ENG_OK with its records neither written nor fsynced (a commit
         * acknowledged as durable, or a page written before its log). */
        while (w->flushing) pthread_cond_wait(&w->flush_cv, &w->flush_mu);
        unlock_in_order(&locks_held, &w->flush_mu, LK_FLUSH);
        return is_poisoned(w) ? ENG_POISONED : ENG_OK;
#else
        pthread_cond_wait(&w->flush_cv, &w->flush_mu);
#endif
    }
    w->flushing = 1;
    unlock_in_order(&locks_held, &w->flush_mu, LK_FLUSH);

    int rc = write_snapshot(w, 1);

    lock_in_order(&locks_held, &w->flush_mu, LK_FLUSH);
    w->flushing = 0;
    pthread_cond_broadcast(&w->flush_cv);
    unlock_in_order(&locks_held, &w->flush_mu, LK_FLUSH);
    return rc;
}

int wal_write_out(wal *w) {
    if (is_poisoned(w)) return ENG_POISONED;
    return write_snapshot(w, 0);
}

uint64_t wal_insert_lsn(wal *w) { return atomic_load(&w->insert_lsn); }

uint64_t wal_durable_lsn(wal *w) { return atomic_load(&w->durable_lsn); }

void wal_get_stats(wal *w, wal_stats *st) {
    st->bytes_appended = atomic_load(&w->st_bytes_appended);
    st->bytes_written = atomic_load(&w->st_bytes_written);
    st->records = atomic_load(&w->st_records);
    st->syncs = atomic_load(&w->st_syncs);
    st->segments_created = atomic_load(&w->st_segments_created);
    st->segments_recycled = atomic_load(&w->st_segments_recycled);
    st->segments_removed = atomic_load(&w->st_segments_removed);
    st->archive_bytes = atomic_load(&w->st_archive_bytes);
    st->segments_archived = atomic_load(&w->st_segments_archived);
}

/* ---- open and close ------------------------------------------------------------- */

/* fsync every existing segment at or below LAST.  After a crash of the
 * process (not of the machine) the recovered log may still sit unsynced in
 * the page cache; the new generation's witnesses claim it durable, so it
 * must be before the first block is written (and before any page that
 * replay dirtied can follow the write-ahead rule). */
static int sync_existing(wal *w, uint64_t last) {
    uint64_t *v;
    size_t n;
    int rc = wal_seg_list(w->waldir, &v, &n);
    for (size_t i = 0; rc == ENG_OK && i < n && v[i] <= last; i++) {
        if (v[i] & (w->seg_size - 1)) continue; /* not a segment of this size */
        char name[17];
        seg_name(name, v[i]);
        io_file f;
        rc = io_open(w->io, w->waldir, name, seg_file_id(w->seg_size, v[i]), 0, 0, &f);
        if (rc != ENG_OK) break;
        rc = io_sync(w->io, &f);
        io_close(w->io, &f);
        if (rc == ENG_OK) stat_add(&w->st_syncs, 1);
        /* Its name may not be durable either: an earlier handle or process
         * created it and may have died (or been poisoned) before any sync
         * of the directory.  wal_open syncs the directory once. */
        w->need_dirsync = 1;
    }
    free(v);
    return rc;
}

/* Load the block holding start_lsn (mid-block) so its earlier bytes are
 * rewritten unchanged (W1); bytes at and after start_lsn become zero.  Its
 * header is rebuilt in the new generation; wb_cont is kept when the old
 * header is valid at its position (otherwise nothing before start_lsn is
 * trusted to continue anything and 0 is written). */
static int load_partial_block(wal *w) {
    uint64_t b = blk_of(w->ins);
    uint32_t off = blk_off(w->ins);
    wal_seg *s;
    int rc = seg_get(w, b & ~(w->seg_size - 1), &s);
    if (rc != ENG_OK || off == 0) return rc;
    size_t done = 0;
    rc = io_read(w->io, &s->f, w->buf, WAL_BLOCK, b - s->base, &done);
#ifdef ENG_BROKEN_PARTIAL_BLOCK_READ_ERROR_AS_EMPTY
    /* planted bug (tests/mutants.txt): a failed read of the partial block
     * is taken as a block not on disk yet (done 0, zeros), not returned:
     * the open succeeds, and the first write of the block puts zeros over
     * the synced records before the log's end (W1 broken), the checkpoint
     * record the redo point names among them after a clean close. */
    if (rc != ENG_OK) done = 0, rc = ENG_OK;
#else
    if (rc != ENG_OK) return rc;
#endif
#ifdef ENG_BROKEN_REOPEN_KEEPS_BYTES_PAST_LOG_END
    /* planted bug (tests/mutants.txt): only what the read did not fill is
     * zeroed, not everything from the log's end: the bytes a torn tail
     * left past it stay in the buffer (B2 broken), and the new records'
     * padding carries them to disk, where the reader finds non-zero
     * padding in the synced log and reports it as damage. */
    memset(w->buf + done, 0, WAL_BLOCK - done);
#else
    memset(w->buf + (done < off ? done : off), 0, WAL_BLOCK - (done < off ? done : off));
#endif
    uint16_t cont = 0;
    /* planted bug (tests/mutants.txt): the #ifndef leaves the old header's
     * continuation out, so the rebuilt header says no record continues into
     * the block even when the log's last record does. */
#ifndef ENG_BROKEN_REOPEN_DROPS_BLOCK_CONTINUATION
    wb_hdr h;
    uint64_t e, f;
    if (done >= WAL_BLOCK_HDR && !wal_wb_check_at(w->buf, b, &h, &e, &f) && h.cont <= off - WAL_BLOCK_HDR)
        cont = h.cont;
#endif
    wal_wb_init(w->buf, b, w->gen, cont);
    return ENG_OK;
}

void wal_close(wal *w) {
    if (!w) return;
    for (size_t i = 0; i < w->nsegs; i++) {
        io_close(w->io, &w->segs[i]->f);
        free(w->segs[i]);
    }
    free(w->segs);
    free(w->sync_set);
    free(w->reqs);
    free(w->buf);
    if (w->xs) XXH3_freeState(w->xs);
    pthread_mutex_destroy(&w->flush_mu);
    pthread_cond_destroy(&w->flush_cv);
    pthread_mutex_destroy(&w->ins_mu);
    pthread_mutex_destroy(&w->write_mu);
    free(w->dir);
    free(w->waldir);
    free(w->archive_dir);
    free(w);
}

int wal_open(const wal_config *cfg, wal **out) {
    *out = NULL;
    if (!cfg || !cfg->io || !cfg->dir || !valid_seg_size(cfg->seg_size) || cfg->buffer_size < 4 * WAL_BLOCK ||
        cfg->buffer_size % WAL_BLOCK || !valid_stream_pos(cfg->start_lsn) ||
        (cfg->prev_lsn && cfg->prev_lsn >= cfg->start_lsn))
        return ENG_INVALID;
    wal *w = calloc(1, sizeof *w);
    if (!w) return ENG_NOMEM;
    pthread_mutex_init(&w->flush_mu, NULL);
    pthread_cond_init(&w->flush_cv, NULL);
    pthread_mutex_init(&w->ins_mu, NULL);
    pthread_mutex_init(&w->write_mu, NULL);
    w->io = cfg->io;
    w->seg_size = cfg->seg_size;
    w->gen = cfg->gen;
    w->rep = cfg->reporter;
    w->dir = strdup(cfg->dir);
    w->waldir = wal_path_join(cfg->dir, WAL_DIR);
    w->archive_dir = cfg->archive_dir ? strdup(cfg->archive_dir) : NULL;
    w->buf_cap = cfg->buffer_size;
    w->buf = calloc(1, w->buf_cap);
    w->reqs_cap = reqs_needed(w->buf_cap, w->seg_size);
    w->reqs = calloc(w->reqs_cap, sizeof *w->reqs);
    w->xs = XXH3_createState();
    int rc = ENG_OK;
    if (!w->dir || !w->waldir || (cfg->archive_dir && !w->archive_dir) || !w->buf || !w->reqs || !w->xs) rc = ENG_NOMEM;

    if (rc == ENG_OK) {
        if (mkdir(w->waldir, 0755) == 0)
            rc = io_dirsync(w->io, w->dir); /* the new wal/ entry must survive */
        else if (errno != EEXIST)
            rc = io_status_from_errno(errno);
    }
    uint64_t start = cfg->start_lsn;
    w->ins = start;
    w->prev_rec = cfg->prev_lsn;
    w->buf_lsn = blk_of(start);
    w->written_full = blk_of(start);
    w->written_lsn = start;
    w->cur_seg = start & ~(w->seg_size - 1);
    if (rc == ENG_OK) rc = sync_existing(w, w->cur_seg);
    if (rc == ENG_OK) rc = load_partial_block(w);
    if (rc == ENG_OK && w->need_dirsync) {
        rc = io_dirsync(w->io, w->waldir);
        w->need_dirsync = 0;
    }
    if (rc != ENG_OK) {
        wal_close(w);
        return rc;
    }
    atomic_init(&w->insert_lsn, start);
    atomic_init(&w->durable_lsn, start);
    atomic_init(&w->poisoned, 0);
    *out = w;
    return ENG_OK;
}

/* ---- removing, recycling, archiving ------------------------------------------------ */

/* Copy segment NAME to archive_dir/NAME and fsync the copy (the caller
 * fsyncs the archive directory before anything is removed). */
static int archive_copy(wal *w, const char *name, uint64_t base, uint8_t *tmp) {
    io_file src, dst;
    int rc = io_open(w->io, w->waldir, name, seg_file_id(w->seg_size, base), 0, 1, &src);
    if (rc != ENG_OK) return rc;
    rc = io_open(w->io, w->archive_dir, name, -1, 1, 0, &dst);
    if (rc != ENG_OK) {
        io_close(w->io, &src);
        return rc;
    }
    uint64_t off = 0;
    for (;;) {
        size_t done = 0;
        rc = io_read(w->io, &src, tmp, ARCHIVE_CHUNK, off, &done);
        if (rc != ENG_OK || done == 0) break;
        rc = io_write(w->io, &dst, tmp, done, off);
        if (rc != ENG_OK) break;
        off += done;
        if (done < ARCHIVE_CHUNK) break;
    }
    if (rc == ENG_OK) rc = io_truncate(w->io, &dst, off); /* an older, longer copy */
    if (rc == ENG_OK) rc = io_sync(w->io, &dst);
    io_close(w->io, &dst);
    io_close(w->io, &src);
    if (rc == ENG_OK) {
        stat_add(&w->st_archive_bytes, off);
        stat_add(&w->st_segments_archived, 1);
    }
    return rc;
}

/* Only segments wholly below min(LSN, durable_lsn) go: a segment holding
 * bytes not yet durable is still the log's only copy of them.  Archive
 * copies are made outside the locks; the renames and unlinks happen under
 * write_mu, because the writer creates segment files only there and a
 * rename onto a name it just created would replace its file. */
int wal_remove_before(wal *w, uint64_t lsn) {
    if (is_poisoned(w)) return ENG_POISONED;
    uint64_t limit = min64(lsn, atomic_load(&w->durable_lsn));
    uint64_t *v;
    size_t n;
    int rc = wal_seg_list(w->waldir, &v, &n);
    if (rc != ENG_OK) return rc;
    size_t ncand = 0;
    for (size_t i = 0; i < n; i++)
        if ((v[i] & (w->seg_size - 1)) == 0 && v[i] + w->seg_size <= limit) v[ncand++] = v[i]; /* ascending, in place */
    if (ncand == 0) {
        free(v);
        return ENG_OK;
    }

    if (w->archive_dir) {
        uint8_t *tmp = malloc(ARCHIVE_CHUNK);
        if (!tmp) rc = ENG_NOMEM;
        for (size_t i = 0; rc == ENG_OK && i < ncand; i++) {
            char name[17];
            seg_name(name, v[i]);
            rc = archive_copy(w, name, v[i], tmp);
        }
        free(tmp);
        if (rc == ENG_OK) rc = io_dirsync(w->io, w->archive_dir);
        if (rc != ENG_OK) {
            free(v);
            return rc;
        }
    }

    int changed = 0;
    uint64_t *all;
    size_t nall;
#ifdef ENG_BROKEN_RECYCLE_LISTS_BEFORE_WRITER_LOCK
    /* planted bug (tests/mutants.txt): the directory is listed and the
     * current segment read before the writer lock is taken (no readdir
     * under write_mu), so a segment the writer creates while this waits
     * for the lock is missing from the list: the spare is renamed onto
     * it, replacing the live file the writer goes on writing (unlinked). */
    rc = wal_seg_list(w->waldir, &all, &nall);
    uint64_t cur = atomic_load(&w->insert_lsn) & ~(w->seg_size - 1);
    lock_in_order(&locks_held, &w->write_mu, LK_WRITE);
#else
    lock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    rc = wal_seg_list(w->waldir, &all, &nall);
    uint64_t cur = atomic_load(&w->insert_lsn) & ~(w->seg_size - 1);
#endif
    if (rc == ENG_OK) {
        uint64_t top = cur;
        int spares = 0;
        for (size_t i = 0; i < nall; i++) {
            if (all[i] > cur && (all[i] & (w->seg_size - 1)) == 0) spares++;
            if (all[i] > top && (all[i] & (w->seg_size - 1)) == 0) top = all[i];
        }
        free(all);
        for (size_t i = 0; rc == ENG_OK && i < ncand; i++) {
            int busy = 0;
            for (size_t j = 0; j < w->nsegs; j++)
                if (w->segs[j]->base == v[i]) {
                    /* Every write below durable_lsn was synced before it
                     * was published (B3), and nothing writes there since. */
                    assert(!w->segs[j]->dirty && !w->segs[j]->pins);
                    if (w->segs[j]->dirty || w->segs[j]->pins)
                        busy = 1; /* cannot happen below durable_lsn; keep it */
                    else
                        seg_drop(w, j);
                    break;
                }
            if (busy) continue;
            char name[17];
            seg_name(name, v[i]);
            if (spares < WAL_MAX_SPARES) {
                /* Beyond every existing name: the writer opens it when the
                 * stream gets there and overwrites it block by block; its
                 * stale blocks fail the reader's wb_lsn check. */
                char to[17];
#ifdef ENG_BROKEN_RECYCLE_ONTO_LIVE_SEGMENT
                /* planted bug (tests/mutants.txt): the spare is named
                 * before the name is advanced, so it takes the highest
                 * existing name -- with no spare yet, the segment being
                 * written, whose synced records the rename throws away. */
                seg_name(to, top);
                top += w->seg_size;
#else
                top += w->seg_size;
                seg_name(to, top);
#endif
                rc = io_rename(w->io, w->waldir, name, to);
                if (rc == ENG_OK) {
                    spares++;
                    stat_add(&w->st_segments_recycled, 1);
                }
            } else {
                rc = io_unlink(w->io, w->waldir, name);
                if (rc == ENG_NOTFOUND) rc = ENG_IOERR; /* listed a moment ago: someone else's doing */
                if (rc == ENG_OK) stat_add(&w->st_segments_removed, 1);
            }
            changed |= rc == ENG_OK;
        }
    }
    unlock_in_order(&locks_held, &w->write_mu, LK_WRITE);
    free(v);
    if (changed) {
        int rc2 = io_dirsync(w->io, w->waldir);
        if (rc == ENG_OK) rc = rc2;
    }
    return rc;
}
