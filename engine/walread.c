/*
 * walread.c -- the log's reader (wal.h): follows the record chain from a
 * start LSN and decides where the log ends (W3), for recovery, verify and
 * the tools alike.
 *
 * Reads segment files through a window of RD_CHUNK bytes and follows the
 * record chain (xl_lsn, xl_prev, block positions, generations, wb_cont),
 * copying record bytes around sector trailers and block headers.  The
 * first record that cannot be read ends the log at L; W3 then checks the
 * sectors that record occupies against their own trailers (rd_check_sectors),
 * and if all pass, looks at every block from L's own block to the end of
 * the segment files after it (across gaps, once the walk has read a
 * block) for a witness above L (rd_conclude).
 * Records that read back are never checked sector by sector: their XXH3
 * covers their bytes, and the trailers cost the reader nothing until it
 * must tell damage from a tear.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "crc32c.h"
#include "wal_int.h"

/* Reader window: large enough that a sequential read of the log costs one
 * syscall per 32 blocks, small next to the smallest segment (64 KiB) so a
 * window never spans two segment files. */
#define RD_CHUNK (64u << 10)

/* ============================================================================
 * Reader
 * ========================================================================== */

/* Internal result of the record walk: the log ends (details in fail_*). */
#define RD_END (-1)

struct wal_reader {
    io_ctx *io;
    char *waldir;
    uint64_t seg_size;
    eng_reporter rep;

    /* one open segment; state 0 none, 1 open, 2 missing */
    io_file f;
    uint64_t f_base;
    int f_state;

    /* read window [win_lsn, win_lsn + win_len), blocks past EOF zeroed;
     * win_eof is where the file ended inside it (UINT64_MAX: past it) */
    uint8_t *win;
    uint64_t win_lsn, win_eof;
    size_t win_len;

    uint64_t pos;  /* where the next record goes (may be a block start) */
    uint64_t prev; /* xl_prev the next record must carry (0: unchecked) */
    uint64_t end, last_lsn;
    uint32_t gen; /* generation of the last valid block along the log */
    uint32_t max_gen;
    uint64_t vblock; /* last block validated along the log */
    int done, status, trimmed;

    /* the first failure: where the log ends (L) and why */
    uint64_t fail_lsn, fail_block;
    const char *fail_why;
    uint64_t fail_expected, fail_found;
    uint64_t fail_end;    /* end of the failing record's bytes (W3a checks up to here) */
    int fail_block_bad;   /* L's own block header was the problem */
    uint64_t fail_seg;    /* the segment the walk needed next ... */
    int fail_seg_missing; /* ... has no file */
    uint64_t cur_len;     /* bytes of the record being read known so far:
                           its header, then its length once read and sane */

    uint8_t *rec;
    size_t rec_cap;
};

static int rd_seg_open(wal_reader *r, uint64_t base) {
    if (r->f_state && r->f_base == base) return ENG_OK;
    if (r->f_state == 1) io_close(r->io, &r->f);
    r->f_state = 0;
    r->win_len = 0;
    char name[17];
    seg_name(name, base);
    int rc = io_open(r->io, r->waldir, name, seg_file_id(r->seg_size, base), 0, 1, &r->f);
    if (rc != ENG_OK) {
        if (wal_seg_exists(r->waldir, base)) return rc; /* there but unreadable: an I/O error, not the end */
        r->f_base = base;
        r->f_state = 2;
        return ENG_OK;
    }
    r->f_base = base;
    r->f_state = 1;
    return ENG_OK;
}

/* *P = block B (bytes past EOF read as zero), or NULL if the segment or
 * the block does not exist.  Pointers stay valid until the next call. */
static int rd_block(wal_reader *r, uint64_t b, const uint8_t **p) {
    *p = NULL;
    assert(blk_off(b) == 0); /* callers ask for whole blocks */
    if (r->win_len && b >= r->win_lsn && b - r->win_lsn < r->win_len) {
        *p = r->win + (b - r->win_lsn);
        return ENG_OK;
    }
    uint64_t base = b & ~(r->seg_size - 1);
    int rc = rd_seg_open(r, base);
    if (rc != ENG_OK || r->f_state != 1) return rc;
    size_t want = (size_t)min64(RD_CHUNK, base + r->seg_size - b), done = 0;
    r->win_len = 0;
    rc = io_read(r->io, &r->f, r->win, want, b - base, &done);
#ifdef ENG_BROKEN_LOG_READ_ERROR_ENDS_LOG
    /* planted bug (tests/mutants.txt): a block that cannot be read is
     * taken as no block, like one past the file's end: a read error in
     * recovery ends the log there (W3 then trims it as a torn tail, or
     * calls it damage when a later block reads), never ENG_IOERR. */
    if (rc != ENG_OK || done == 0) return ENG_OK;
#else
    if (rc != ENG_OK || done == 0) return rc;
#endif
    size_t full = (done + WAL_BLOCK - 1) & ~(size_t)(WAL_BLOCK - 1);
    memset(r->win + done, 0, full - done);
    r->win_lsn = b;
    r->win_eof = done < want ? b + done : UINT64_MAX;
    r->win_len = full;
    *p = r->win;
    return ENG_OK;
}

/* Record that the log ends at record position L for reason WHY. */
static int rd_fail(wal_reader *r, uint64_t L, uint64_t block, const char *why, uint64_t expected, uint64_t found,
                   int block_bad) {
    r->fail_lsn = L;
#ifdef ENG_BROKEN_TAIL_CHECK_END_IGNORES_TRAILERS
    /* planted bug (tests/mutants.txt): the failing record's end is its
     * start plus its length, as if its bytes were contiguous: the sector
     * trailers and block headers it runs over are not counted, so W3a
     * stops short of the last sector of a record that spans sectors. */
    r->fail_end = L + r->cur_len;
#else
    r->fail_end = stream_end(L, r->cur_len);
#endif
    r->fail_block = block;
    r->fail_why = why;
    r->fail_expected = expected;
    r->fail_found = found;
    r->fail_block_bad = block_bad && block == blk_of(L);
    return RD_END;
}

/* Enter block B as the next block along the log while reading the record
 * at L: it must exist, be valid at its own position, and not go back in
 * generation.  *P points to it. */
static int rd_enter(wal_reader *r, uint64_t b, uint64_t L, const uint8_t **p) {
    int rc = rd_block(r, b, p);
    if (rc != ENG_OK) return rc;
    if (!*p) {
        rd_fail(r, L, b, "is missing (the log ends)", 0, 0, 1);
        /* Past the end of a segment file, or no file at all: only the
         * second can be a lost file (W3 then names it if later blocks
         * prove the log went on). */
        r->fail_seg = b & ~(r->seg_size - 1);
        r->fail_seg_missing = r->f_state == 2 && r->f_base == r->fail_seg;
        return RD_END;
    }
    if (b == r->vblock) return ENG_OK;
    wb_hdr h;
    uint64_t e = 0, f = 0;
    const char *why = wal_wb_check_at(*p, b, &h, &e, &f);
    if (why) return rd_fail(r, L, b, why, e, f, 1);
    if (h.gen < r->gen) return rd_fail(r, L, b, "lies in a block of an older generation", r->gen, h.gen, 1);
    r->gen = h.gen;
    if (h.gen > r->max_gen) r->max_gen = h.gen;
    r->vblock = b;
    return ENG_OK;
}

static int rd_grow(wal_reader *r, size_t need) {
    if (need <= r->rec_cap) return ENG_OK;
    size_t cap = r->rec_cap;
    while (cap < need) cap *= 2;
    uint8_t *n = realloc(r->rec, cap);
    if (!n) return ENG_NOMEM;
    r->rec = n;
    r->rec_cap = cap;
    return ENG_OK;
}

/* Copy N record bytes from stream position *POS into DST, skipping sector
 * trailers and entering every block reached at its start (rd_enter, for
 * the record at L).  DONE is how many of the record's bytes came before
 * these.  A block entered must continue min(LEN - bytes before it,
 * WB_PAYLOAD) record bytes (wb_cont); with LEN 0 (the header, length not
 * known yet) the first block entered is left to the caller: *ENTERED gets
 * its LSN and *ENTERED_AT the record bytes before it.  *POS ends just past
 * the last byte copied. */
static int rd_copy(wal_reader *r, uint64_t L, uint64_t *pos, uint8_t *dst, size_t n, uint64_t len, size_t done,
                   uint64_t *entered, size_t *entered_at) {
    uint64_t x = *pos;
    while (n > 0) {
        uint32_t so = sec_off(x);
        if (so >= WAL_SECTOR_DATA) {
            x += WAL_SECTOR - so;
            continue;
        }
        const uint8_t *p;
        int rc;
        if (blk_off(x) == 0) {
            rc = rd_enter(r, x, L, &p);
            if (rc != ENG_OK) return rc;
            if (len) {
                uint64_t want = min64(len - done, WB_PAYLOAD);
                if (fmt_get16(p + WB_CONT_OFF) != want)
                    return rd_fail(r, L, x, "runs into a block whose continuation length is wrong", want,
                                   fmt_get16(p + WB_CONT_OFF), 0);
            } else if (*entered == UINT64_MAX) {
                *entered = x;
                *entered_at = done;
            }
            x += WAL_BLOCK_HDR;
        } else {
            rc = rd_block(r, blk_of(x), &p);
            if (rc != ENG_OK) return rc;
            if (!p) /* cannot happen: the block was entered already */
                return rd_fail(r, L, blk_of(x), "is missing (the log ends)", 0, 0, 0);
        }
        size_t c = WAL_SECTOR_DATA - sec_off(x);
        if (c > n) c = n;
        memcpy(dst, p + blk_off(x), c);
        dst += c;
        done += c;
        n -= c;
        x += c;
    }
    *pos = x;
    return ENG_OK;
}

/* Read the record at r->pos into *REC: ENG_OK, RD_END, or an I/O status. */
static int rd_record(wal_reader *r, wal_record *out) {
    uint64_t L = rec_start_at(r->pos);
    uint64_t b = blk_of(L);
    uint32_t off = blk_off(L);
    const uint8_t *p;
    r->cur_len = WAL_REC_HDR;
    int rc = rd_enter(r, b, L, &p);
    if (rc != ENG_OK) return rc;
    uint16_t cont = fmt_get16(p + WB_CONT_OFF);
    uint32_t gen = fmt_get32(p + WB_GEN_OFF);
    /* A record at the first payload byte opens the block; elsewhere the
     * continuation lies before it. */
    if (off == WAL_BLOCK_HDR ? cont != 0 : cont > pay_before(off))
        return rd_fail(r, L, b, "lies in a block whose continuation length is wrong", 0, cont, 0);

    /* header, possibly straddling a trailer or into the next block */
    uint8_t *h = r->rec;
    uint64_t pos = L, straddle = UINT64_MAX;
    size_t got = 0;
    rc = rd_copy(r, L, &pos, h, WAL_REC_HDR, 0, 0, &straddle, &got);
    if (rc != ENG_OK) return rc;
    if (all_zero(h, WAL_REC_HDR)) return rd_fail(r, L, b, "is absent (zero header)", 0, 0, 0);
    uint32_t len = fmt_get32(h + XL_LEN_OFF);
    int type = h[XL_TYPE_OFF], flags = h[XL_FLAGS_OFF];
    uint64_t xprev = fmt_get64(h + XL_PREV_OFF), xlsn = fmt_get64(h + XL_LSN_OFF), xcheck = fmt_get64(h + XL_CHECK_OFF);
    if (len < WAL_REC_HDR || len > WAL_MAX_RECORD + WAL_REC_HDR)
        return rd_fail(r, L, b, "has an impossible length", WAL_REC_HDR, len, 0);
#ifdef ENG_BROKEN_TAIL_CHECK_HEADER_ONLY
        /* planted bug (tests/mutants.txt): the record's length is never
     * recorded for W3a, which then checks only the sectors of its header:
     * damage to the payload of the log's last (synced) record passes for a
     * torn tail and the record is trimmed silently. */
#else
    r->cur_len = len;
#endif
    if (type < 1 || type > WAL_REC_TYPE_MAX)
        return rd_fail(r, L, b, "has an unknown type", WAL_REC_TYPE_MAX, (uint64_t)type, 0);
    if (fmt_get16(h + XL_RESERVED_OFF) != 0)
        return rd_fail(r, L, b, "has non-zero reserved header bytes", 0, fmt_get16(h + XL_RESERVED_OFF), 0);
    if (xlsn != L) return rd_fail(r, L, b, "carries another position", L, xlsn, 0);
    if (r->prev && xprev != r->prev) return rd_fail(r, L, b, "does not follow the previous record", r->prev, xprev, 0);
    if (straddle != UINT64_MAX) {
        rc = rd_block(r, straddle, &p);
        if (rc != ENG_OK) return rc;
        uint64_t want = min64(len - got, WB_PAYLOAD);
        if (p && fmt_get16(p + WB_CONT_OFF) != want)
            return rd_fail(r, L, straddle, "runs into a block whose continuation length is wrong", want,
                           fmt_get16(p + WB_CONT_OFF), 0);
    }

    /* payload */
    rc = rd_grow(r, len);
    if (rc != ENG_OK) return rc;
    rc = rd_copy(r, L, &pos, r->rec + WAL_REC_HDR, len - WAL_REC_HDR, len, WAL_REC_HDR, NULL, NULL);
    if (rc != ENG_OK) return rc;
    fmt_put64(r->rec + XL_CHECK_OFF, 0);
    uint64_t sum = XXH3_64bits(r->rec, len);
    if (sum != xcheck) return rd_fail(r, L, b, "fails its checksum", xcheck, sum, 0);
    /* Padding up to the next 8-aligned position: zero, except a trailer
     * it may reach (a sector's data ends at 508, not 8-aligned). */
    uint64_t end = align8(pos);
    if (end != pos && sec_off(pos) < WAL_SECTOR_DATA) {
        uint64_t stop = min64(end, (pos & ~(uint64_t)(WAL_SECTOR - 1)) + WAL_SECTOR_DATA);
        rc = rd_block(r, blk_of(pos), &p);
        if (rc != ENG_OK) return rc;
        if (p && !all_zero(p + blk_off(pos), (size_t)(stop - pos))) {
            rd_fail(r, L, blk_of(pos), "is followed by non-zero padding", 0, 0, 0);
            r->fail_end = stop;
            return RD_END;
        }
    }

    /* The walk only moves forward, from one record position to the next
     * (positions are the reader's own arithmetic, not bytes it read). */
    assert(L >= r->pos && end > L && valid_stream_pos(end));
    out->lsn = L;
    out->end = end;
    out->prev = xprev;
    out->type = type;
    out->flags = flags;
    out->gen = gen;
    out->payload = r->rec + WAL_REC_HDR;
    out->len = len - WAL_REC_HDR;
    r->prev = L;
    r->last_lsn = L;
    r->end = end;
    r->pos = end;
    return ENG_OK;
}

/* 1 if the bytes of block P in offsets [FROM, WAL_BLOCK) are zero, sector
 * trailers left out (a trailer before the end belongs to the data before
 * it). */
static int data_zero_from(const uint8_t *p, uint32_t from) {
    for (uint32_t x = from; x < WAL_BLOCK;) {
        uint32_t so = x % WAL_SECTOR;
        if (so >= WAL_SECTOR_DATA) {
            x += WAL_SECTOR - so;
            continue;
        }
        uint32_t n = WAL_SECTOR_DATA - so;
        if (!all_zero(p + x, n)) return 0;
        x += n;
    }
    return 1;
}

/* The report for the log stopping at L on damage found at BAD (a sector,
 * or the block whose witness is above L): named by L's segment, block and
 * offset, with the span in blocks from L's block to BAD's (where the
 * damage may lie) as the entry. */
static int rd_report(wal_reader *r, uint64_t bad, uint64_t expected, uint64_t found, const char *tail) {
    uint64_t L = r->fail_lsn, seg0 = L & ~(r->seg_size - 1);
    char name[17], file[64];
    seg_name(name, seg0);
    snprintf(file, sizeof file, "%s/%s", WAL_DIR, name);
    uint64_t last = bad > r->fail_end ? bad : r->fail_end;
    int32_t span = last > L ? (int32_t)min64((last - 1) / WAL_BLOCK - L / WAL_BLOCK, INT32_MAX) : 0;
    r->trimmed = 0;
    return eng_report(&r->rep, ENG_LAYER_WAL, file, (int64_t)((L - seg0) / WAL_BLOCK), (int64_t)(L - seg0), span,
                      expected, found, "record at LSN 0x%llx %s, %s", (unsigned long long)L, r->fail_why, tail);
}

/* W3 (a): the sectors of the failing record, from L's sector (its block's
 * first when L's block header was the problem) to fail_end, each against
 * its own trailer.  ENG_OK if all pass (or do not exist), ENG_CORRUPTION
 * with a report for the first that fails, or an I/O status.  A sector the
 * end of its file cuts counts as cut, not damaged: the file system lost the
 * size, not a sector's contents. */
static int rd_check_sectors(wal_reader *r) {
    uint64_t L = r->fail_lsn;
#ifdef ENG_BROKEN_TAIL_CHECK_SKIPS_FIRST_SECTOR
    /* planted bug (tests/mutants.txt): L is rounded up to a sector
     * boundary, not down, so the sector holding the start of the failing
     * record (all of a record that ends in it) is never checked: damage
     * there passes for a torn tail and a synced record is trimmed. */
    uint64_t from = r->fail_block_bad ? blk_of(L) : (L + WAL_SECTOR - 1) & ~(uint64_t)(WAL_SECTOR - 1);
#else
    uint64_t from = r->fail_block_bad ? blk_of(L) : L & ~(uint64_t)(WAL_SECTOR - 1);
#endif
    uint64_t to = r->fail_end > L ? r->fail_end : L + 1;
    for (uint64_t x = from; x < to; x += WAL_SECTOR) {
        const uint8_t *p;
        int rc = rd_block(r, blk_of(x), &p);
        if (rc != ENG_OK) return rc;
        if (!p) {
            x = blk_of(x) + WAL_BLOCK - WAL_SECTOR; /* no such block: nothing to damage */
            continue;
        }
#ifdef ENG_BROKEN_TAIL_CHECK_FILE_END_COUNTS_AS_CUT
        /* planted bug (tests/mutants.txt): <= instead of <, so the sector
         * that ends exactly at its file's end (the last of the segment's
         * last block) counts as cut by the end and is never checked. */
        if (x < r->win_eof && r->win_eof <= x + WAL_SECTOR) continue;
#else
        if (x < r->win_eof && r->win_eof < x + WAL_SECTOR) continue;
#endif
        const uint8_t *sec = p + blk_off(x);
        if (!wal_sector_valid(sec)) {
            char tail[160];
            snprintf(tail, sizeof tail,
                     "and its sector at LSN 0x%llx (block offset %u) fails its own check: "
                     "damaged after it was written, not torn",
                     (unsigned long long)x, blk_off(x));
            return rd_report(r, x + 1, fmt_get32(sec + WAL_SECTOR_DATA), crc32c(0, sec, WAL_SECTOR_DATA), tail);
        }
    }
    return ENG_OK;
}

/* W3: the log stopped at L.  First (a) the failing record's sectors; then
 * (b) scan from L's block through the rest of the segment files (across
 * missing ones)
 * for a block valid at its own position, of this generation or newer,
 * whose witness says L was durable: then L lay in the synced log and this
 * is corruption, else (c) a torn tail.  L's own block counts when its
 * header is valid: a header is only rewritten with a witness above L
 * after the record at L was durable (W1 keeps that record's bytes
 * unchanged), so even that witness proves the damage.  Also records the
 * trimmed flag and the highest generation present. */
static int rd_conclude(wal_reader *r) {
    int rc = rd_check_sectors(r);
    if (rc != ENG_OK) return rc;
    uint64_t L = r->fail_lsn;
    uint64_t mask = r->seg_size - 1;
    uint64_t seg0 = L & ~mask, b0 = blk_of(L);
    int trimmed = 0;
    /* Every segment file from L's on.  Once the walk has read a block of
     * the log, across gaps: a segment lost in the middle of the log must
     * not hide the witnesses after it.  A walk that found nothing at all
     * started in history removed below a redo point (open checks the
     * segments from the redo point first, F4 in engine.c): then only the
     * consecutive files after L's own look, as before. */
    int cross_gaps = r->vblock != UINT64_MAX;
    uint64_t next = seg0;
    uint64_t *segs;
    size_t nsegs;
    rc = wal_seg_list(r->waldir, &segs, &nsegs);
    if (rc != ENG_OK) return rc;
    for (size_t si = 0; si < nsegs; si++) {
        uint64_t seg = segs[si];
        if (seg < seg0 || (seg & mask)) continue;
#ifdef ENG_BROKEN_WITNESS_SCAN_STAYS_IN_SEGMENT
        /* planted bug (tests/mutants.txt): the witness is looked for in L's
         * own segment file only: when the blocks written after L's loss (a
         * lost or torn write of a segment's last blocks) all lie in the
         * next segment, damage in the synced log passes for a torn tail and
         * the synced commits after L are trimmed without a report. */
        if (seg != seg0) break;
#endif
        if (!cross_gaps) {
            /* L's own segment may be the missing one */
            if (seg != next && !(next == seg0 && seg == seg0 + r->seg_size)) break;
            next = seg + r->seg_size;
        }
        rc = rd_seg_open(r, seg);
        if (rc != ENG_OK) break;
        if (r->f_state != 1) continue; /* gone since it was listed */
        for (uint64_t x = seg == seg0 ? b0 : seg; x < seg + r->seg_size; x += WAL_BLOCK) {
            const uint8_t *p;
            rc = rd_block(r, x, &p);
            if (rc != ENG_OK) break;
            if (!p) break;
            if (seg == seg0 && !trimmed) {
                uint32_t from = (x == b0 && !r->fail_block_bad) ? blk_off(L) : 0;
                trimmed = !data_zero_from(p, from);
            }
            wb_hdr h;
            uint64_t e, f;
            if (wal_wb_check_at(p, x, &h, &e, &f)) continue;
            if (h.gen > r->max_gen) r->max_gen = h.gen;
#ifdef ENG_BROKEN_WITNESS_SCAN_SKIPS_OWN_BLOCK
            /* planted bug (tests/mutants.txt): only the blocks after L's own
             * are asked for a witness, though L's block header, rewritten
             * once later records joined it, can be the last word that L was
             * synced (W1): a synced record there that fails without a bad
             * sector (a zeroed or restored one) passes for a torn tail. */
            if (x == b0) continue;
#endif
#ifdef ENG_BROKEN_WITNESS_AT_END_IS_DAMAGE
            /* planted bug (tests/mutants.txt): a witness equal to L (durable
             * below L, not at it) is taken as proof that L was durable: a
             * tear of the first unsynced record is reported as corruption
             * and the database does not reopen after a power loss. */
            if (h.gen >= r->gen && h.durable >= L) {
#else
            if (h.gen >= r->gen && h.durable > L) {
#endif
                free(segs);
                r->trimmed = 0;
                if (r->fail_seg_missing) {
                    /* a lost file, not a damaged record: name it */
                    char name[17], file[64];
                    seg_name(name, r->fail_seg);
                    snprintf(file, sizeof file, "%s/%s", WAL_DIR, name);
                    return eng_report(&r->rep, ENG_LAYER_WAL, file, -1, -1, -1, r->fail_seg, 0,
                                      "WAL segment %s is missing: the log runs into it at LSN 0x%llx, "
                                      "and block 0x%llx says the log was durable to 0x%llx",
                                      file, (unsigned long long)L, (unsigned long long)x,
                                      (unsigned long long)h.durable);
                }
                char tail[128];
                snprintf(tail, sizeof tail, "but block 0x%llx says the log was durable to 0x%llx",
                         (unsigned long long)x, (unsigned long long)h.durable);
                return rd_report(r, r->fail_end, r->fail_expected, r->fail_found, tail);
            }
        }
        if (rc != ENG_OK) break;
    }
    free(segs);
    if (rc != ENG_OK) return rc;
    r->trimmed = trimmed;
    return ENG_NOTFOUND;
}

int wal_reader_open(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t start_lsn, uint64_t prev_lsn,
                    const eng_reporter *rep, wal_reader **out) {
    *out = NULL;
    if (!io || !dir || !valid_seg_size(seg_size) || !valid_stream_pos(start_lsn)) return ENG_INVALID;
    wal_reader *r = calloc(1, sizeof *r);
    if (!r) return ENG_NOMEM;
    r->io = io;
    r->seg_size = seg_size;
    if (rep) r->rep = *rep;
    r->waldir = wal_path_join(dir, WAL_DIR);
    r->win = malloc(RD_CHUNK);
    r->rec_cap = 64u << 10;
    r->rec = malloc(r->rec_cap);
    if (!r->waldir || !r->win || !r->rec) {
        wal_reader_close(r);
        return ENG_NOMEM;
    }
    r->pos = start_lsn;
    r->prev = prev_lsn;
    r->end = start_lsn;
    r->last_lsn = prev_lsn;
    r->vblock = UINT64_MAX;
    *out = r;
    return ENG_OK;
}

int wal_reader_next(wal_reader *r, wal_record *rec) {
    if (r->done) return r->status;
    int rc = rd_record(r, rec);
    if (rc == ENG_OK) return ENG_OK;
    if (rc == RD_END) rc = rd_conclude(r);
    r->done = 1;
    r->status = rc;
    return rc;
}

void wal_reader_end(wal_reader *r, uint64_t *end, uint64_t *last_lsn, uint32_t *max_gen, int *trimmed) {
    if (end) *end = r->end;
    if (last_lsn) *last_lsn = r->last_lsn;
    if (max_gen) *max_gen = r->max_gen;
    if (trimmed) *trimmed = r->trimmed;
}

void wal_reader_close(wal_reader *r) {
    if (!r) return;
    if (r->f_state == 1) io_close(r->io, &r->f);
    free(r->waldir);
    free(r->win);
    free(r->rec);
    free(r);
}

/* ---- where a log without its history starts ------------------------------------- */

int wal_oldest_record(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t *lsn) {
    if (!valid_seg_size(seg_size)) return ENG_INVALID;
    char *waldir = wal_path_join(dir, WAL_DIR);
    if (!waldir) return ENG_NOMEM;
    uint64_t *segs = NULL, base = UINT64_MAX;
    size_t n = 0;
    if (wal_seg_list(waldir, &segs, &n) == ENG_OK)
        for (size_t i = 0; i < n; i++)
            if ((segs[i] & (seg_size - 1)) == 0 && segs[i] < base) base = segs[i];
    free(segs);
    if (base == UINT64_MAX) {
        free(waldir);
        return ENG_NOTFOUND;
    }
    *lsn = base + WAL_BLOCK_HDR;
    char name[17];
    seg_name(name, base);
    io_file f;
    if (io_open(io, waldir, name, seg_file_id(seg_size, base), 0, 1, &f) != ENG_OK) {
        free(waldir);
        return ENG_OK;
    }
    for (uint64_t b = 0; b < seg_size; b += WAL_BLOCK) {
        uint8_t p[WAL_BLOCK_HDR];
        size_t done = 0;
        wb_hdr h;
        uint64_t e, fd;
        if (io_read(io, &f, p, sizeof p, b, &done) != ENG_OK || done != sizeof p ||
            wal_wb_check_at(p, base + b, &h, &e, &fd))
            break;
        if (h.cont < WB_PAYLOAD) {
            /* cont record bytes, skipping sector trailers */
            *lsn = align8(stream_end(base + b + WAL_BLOCK_HDR, h.cont));
            break;
        }
    }
    io_close(io, &f);
    free(waldir);
    return ENG_OK;
}
