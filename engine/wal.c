/*
 * wal.c -- the write-ahead log of wal.h: the appending side (log buffer,
 * block framing, write-out, group commit, segment files, recycling and
 * archiving) and the reader that decides where the log ends (W3).
 *
 * The byte layout of blocks and records and the rules W1-W4 are drawn in
 * wal.h; this file only adds how the writer and the reader keep them.
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
 *
 * Reader
 * ------
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
#include "crc32c.h"
#include "faultpoints.h"
#include "wal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#define WB_PAYLOAD WAL_BLOCK_PAYLOAD            /* record bytes per block */

/* Segment files get hook file ids above the data file's (0) so a fault
 * library can tell WAL segments apart and each one keeps its own id. */
#define WAL_FILE_ID_BASE 16

/* Spare segments kept for recycling: enough to absorb the segments one
 * checkpoint frees without the directory filling with stale files. */
#define WAL_MAX_SPARES 2

/* Reader window: large enough that a sequential read of the log costs one
 * syscall per 32 blocks, small next to the smallest segment (64 KiB) so a
 * window never spans two segment files. */
#define RD_CHUNK (64u << 10)

/* Archive copies go through a bounce buffer of this size. */
#define ARCHIVE_CHUNK (1u << 20)

/* ---- stream positions ---------------------------------------------------- */

static inline uint64_t blk_of(uint64_t x)
{
    return x & ~(uint64_t)(WAL_BLOCK - 1);
}
static inline uint32_t blk_off(uint64_t x)
{
    return (uint32_t)(x & (WAL_BLOCK - 1));
}
static inline uint64_t align8(uint64_t x)
{
    return (x + 7) & ~(uint64_t)7;
}
static inline uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static inline uint32_t sec_off(uint64_t x)
{
    return (uint32_t)(x & (WAL_SECTOR - 1));
}

/* A record placed at insert position POS starts there, or just past the
 * header of the block that begins at POS.  (POS is 8-aligned, so it never
 * lies in a sector trailer: those are bytes 508-511 of a sector.) */
static inline uint64_t rec_start_at(uint64_t pos)
{
    return blk_off(pos) == 0 ? pos + WAL_BLOCK_HDR : pos;
}

/* Record bytes in block offsets [0, OFF): what lies in neither the header
 * nor a trailer. */
static inline uint32_t pay_before(uint32_t off)
{
    uint32_t s = off / WAL_SECTOR, o = off % WAL_SECTOR;
    uint32_t n = s * WAL_SECTOR_DATA + (o < WAL_SECTOR_DATA ? o : WAL_SECTOR_DATA);
    return n > WAL_BLOCK_HDR ? n - WAL_BLOCK_HDR : 0;
}

/* Block offset of the record byte with index Q (< WB_PAYLOAD) in the
 * block's payload. */
static inline uint32_t pay_pos(uint32_t q)
{
    uint32_t x = q + WAL_BLOCK_HDR;
    return x / WAL_SECTOR_DATA * WAL_SECTOR + x % WAL_SECTOR_DATA;
}

/* The stream position just past N record bytes placed from position START
 * (a record start, or a block start whose header comes first), skipping
 * the trailers and headers they run over.  A record that fills a sector's
 * data ends at its trailer (offset 508), one that fills a block's payload
 * at 4092: the 8-aligned end after it is the next sector or block. */
static uint64_t stream_end(uint64_t start, uint64_t n)
{
    if (n == 0)
        return start;
    uint64_t q = pay_before(blk_off(start)) + n; /* from the block's payload start */
    uint64_t blocks = (q - 1) / WB_PAYLOAD;
    return blk_of(start) + blocks * WAL_BLOCK + pay_pos((uint32_t)((q - 1) % WB_PAYLOAD)) + 1;
}

uint64_t wal_stream_advance(uint64_t pos, uint64_t n)
{
    return stream_end(pos, n);
}

uint64_t wal_payload_between(uint64_t a, uint64_t b)
{
    uint64_t pa = a / WAL_BLOCK * WB_PAYLOAD + pay_before(blk_off(a));
    uint64_t pb = b / WAL_BLOCK * WB_PAYLOAD + pay_before(blk_off(b));
    return pb > pa ? pb - pa : 0;
}

/* ---- sector trailers ---------------------------------------------------------- */

int wal_sector_valid(const uint8_t *s)
{
    uint32_t stored = fmt_get32(s + WAL_SECTOR_DATA);
    if (stored == crc32c(0, s, WAL_SECTOR_DATA))
        return 1;
    /* Never written: zero throughout.  (A written sector whose data is
     * zero carries the check of zeros, never a zero trailer, unless the
     * CRC happens to be 0 -- and then it is all zero and valid anyway.) */
    return stored == 0 && s[0] == 0 && memcmp(s, s + 1, WAL_SECTOR_DATA - 1) == 0;
}

void wal_sector_seal(uint8_t *s)
{
    fmt_put32(s + WAL_SECTOR_DATA, crc32c(0, s, WAL_SECTOR_DATA));
}

static inline int valid_seg_size(uint64_t s)
{
    return s >= (64u << 10) && (s & (s - 1)) == 0;
}

/* An LSN where a record may start or the log may end: 8-aligned and not
 * inside a block header. */
static inline int valid_stream_pos(uint64_t x)
{
    return (x & 7) == 0 && (blk_off(x) == 0 || blk_off(x) >= WAL_BLOCK_HDR);
}

static void seg_name(char out[17], uint64_t base)
{
    snprintf(out, 17, "%016llx", (unsigned long long)base);
}

static int seg_file_id(uint64_t seg_size, uint64_t base)
{
    uint64_t n = base / seg_size;
    return n > (uint64_t)(INT_MAX - WAL_FILE_ID_BASE) ? INT_MAX : WAL_FILE_ID_BASE + (int)n;
}

/* 1 and *base if NAME is a segment name (16 lower-case hex digits). */
static int parse_seg_name(const char *name, uint64_t *base)
{
    uint64_t v = 0;
    int i = 0;
    for (; name[i]; i++) {
        char c = name[i];
        if (i >= 16)
            return 0;
        if (c >= '0' && c <= '9')
            v = v << 4 | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v << 4 | (uint64_t)(c - 'a' + 10);
        else
            return 0;
    }
    if (i != 16)
        return 0;
    *base = v;
    return 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The segment files of WALDIR, ascending, into *OUT (malloc'd, may be NULL
 * when *N is 0).  A missing directory is an empty list. */
static int seg_list(const char *waldir, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(waldir);
    if (!d)
        return errno == ENOENT ? ENG_OK : io_status_from_errno(errno);
    uint64_t *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *e;
    int rc = ENG_OK;
    while ((e = readdir(d)) != NULL) {
        uint64_t base;
        if (!parse_seg_name(e->d_name, &base))
            continue;
        if (cnt == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            uint64_t *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                rc = ENG_NOMEM;
                break;
            }
            v = nv;
            cap = ncap;
        }
        v[cnt++] = base;
    }
    closedir(d);
    if (rc != ENG_OK) {
        free(v);
        return rc;
    }
    if (cnt > 1)
        qsort(v, cnt, sizeof *v, cmp_u64);
    *out = v;
    *n = cnt;
    return ENG_OK;
}

/* 1 if WALDIR holds a segment file for BASE (used only after an open
 * failed, to tell a missing segment from an unreadable one). */
static int seg_exists(const char *waldir, uint64_t base)
{
    uint64_t *v;
    size_t n;
    if (seg_list(waldir, &v, &n) != ENG_OK)
        return 1; /* cannot tell: do not call it missing */
    int found = 0;
    for (size_t i = 0; i < n && !found; i++)
        found = v[i] == base;
    free(v);
    return found;
}

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (p) {
        memcpy(p, a, la);
        p[la] = '/';
        memcpy(p + la + 1, b, lb + 1);
    }
    return p;
}

/* ---- block headers ---------------------------------------------------------- */

typedef struct wb_hdr {
    uint64_t lsn, durable, check;
    uint32_t gen;
    uint16_t cont, magic;
} wb_hdr;

static void wb_decode(const uint8_t *p, wb_hdr *h)
{
    h->lsn = fmt_get64(p + WB_LSN_OFF);
    h->durable = fmt_get64(p + WB_DURABLE_OFF);
    h->gen = fmt_get32(p + WB_GEN_OFF);
    h->cont = fmt_get16(p + WB_CONT_OFF);
    h->magic = fmt_get16(p + WB_MAGIC_OFF);
    h->check = fmt_get64(p + WB_CHECK_OFF);
}

/* Start block P at stream position LSN; the witness and checksum are
 * filled when the block is written (wb_seal). */
static void wb_init(uint8_t *p, uint64_t lsn, uint32_t gen, uint16_t cont)
{
    fmt_put64(p + WB_LSN_OFF, lsn);
    fmt_put64(p + WB_DURABLE_OFF, 0);
    fmt_put32(p + WB_GEN_OFF, gen);
    fmt_put16(p + WB_CONT_OFF, cont);
    fmt_put16(p + WB_MAGIC_OFF, WB_MAGIC);
    fmt_put64(p + WB_CHECK_OFF, 0);
}

/* Fill the witness, the header check and the trailers of the block's
 * first NSEC sectors (the ones holding bytes; the rest of a partly filled
 * block is zero, trailers included, and valid as "never written").  Runs
 * every time a block is written, so a rewritten partial block's sectors
 * carry checks of what they hold now (W1, W3). */
static void wb_seal(uint8_t *p, uint64_t durable, unsigned nsec)
{
#ifdef ENG_BROKEN_SEAL_BEFORE_WITNESS
    /* planted bug (tests/mutants.txt): the sector trailers are computed
     * before the witness and the header check are filled in, so sector 0's
     * trailer covers stale header bytes: a log whose end lies in a block's
     * first sector reads as damaged (W3a) and the database does not open. */
    for (unsigned i = 0; i < nsec; i++)
        wal_sector_seal(p + i * WAL_SECTOR);
    fmt_put64(p + WB_DURABLE_OFF, durable);
    fmt_put64(p + WB_CHECK_OFF, XXH3_64bits(p, WB_CHECKED));
#else
    fmt_put64(p + WB_DURABLE_OFF, durable);
    fmt_put64(p + WB_CHECK_OFF, XXH3_64bits(p, WB_CHECKED));
    for (unsigned i = 0; i < nsec; i++)
        wal_sector_seal(p + i * WAL_SECTOR);
#endif
}

/* Why a header is not valid at POS (NULL if it is); *H gets its fields.
 * *EXPECTED / *FOUND describe the mismatch for a report. */
static const char *wb_check_at(const uint8_t *p, uint64_t pos, wb_hdr *h, uint64_t *expected,
                               uint64_t *found)
{
    wb_decode(p, h);
    uint64_t c = XXH3_64bits(p, WB_CHECKED);
    if (h->check != c) {
        *expected = h->check;
        *found = c;
        return "lies in a block whose header fails its checksum";
    }
    if (h->magic != WB_MAGIC) {
        *expected = WB_MAGIC;
        *found = h->magic;
        return "lies in a block with a bad magic";
    }
    if (h->lsn != pos) {
        *expected = pos;
        *found = h->lsn;
        return "lies in a block from another position (stale or misdirected)";
    }
    return NULL;
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

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
    uint64_t ins;       /* next free stream position (8-aligned) */
    uint64_t prev_rec;  /* LSN of the last record appended */
    XXH3_state_t *xs;   /* record checksum state, used under ins_mu */
    uint8_t *buf;       /* buf/buf_cap/buf_lsn change only under both locks */
    size_t buf_cap;
    uint64_t buf_lsn;

    /* write lock */
    pthread_mutex_t write_mu;
    uint64_t written_full, written_lsn;
    uint64_t cur_seg;   /* segment of the last block written: kept open */
    wal_seg **segs;
    size_t nsegs, segs_cap;
    wal_seg **sync_set; /* the syncing flusher's pinned segments */
    size_t sync_cap;
    int need_dirsync;   /* a segment was created since the last sync */
    io_req *reqs;
    size_t reqs_cap;

    _Atomic uint64_t insert_lsn, durable_lsn;
    atomic_int poisoned;

    _Atomic uint64_t st_bytes_appended, st_bytes_written, st_records, st_syncs,
        st_segments_created, st_segments_recycled, st_segments_removed, st_archive_bytes,
        st_segments_archived;
};

static inline void stat_add(_Atomic uint64_t *s, uint64_t v)
{
    atomic_fetch_add_explicit(s, v, memory_order_relaxed);
}

/* W4: after a failed write or fsync the kernel may have dropped dirty pages
 * that the log claims, so nothing may be appended or made "durable" again
 * in this handle. */
static void wal_poison(wal *w)
{
    atomic_store(&w->poisoned, 1);
}

static inline int is_poisoned(wal *w)
{
    return atomic_load(&w->poisoned) != 0;
}

/* ---- segment table (write_mu held) ----------------------------------------- */

/* The open segment for BASE, opened (and created if missing) on first use.
 * A creation is remembered so the next sync also fsyncs the directory:
 * a segment whose name is lost loses its data however well it was synced. */
static int seg_get(wal *w, uint64_t base, wal_seg **out)
{
    for (size_t i = 0; i < w->nsegs; i++)
        if (w->segs[i]->base == base) {
            *out = w->segs[i];
            return ENG_OK;
        }
    if (w->nsegs == w->segs_cap) {
        size_t ncap = w->segs_cap ? 2 * w->segs_cap : 8;
        wal_seg **n = realloc(w->segs, ncap * sizeof *n);
        if (!n)
            return ENG_NOMEM;
        w->segs = n;
        w->segs_cap = ncap;
    }
    wal_seg *s = calloc(1, sizeof *s);
    if (!s)
        return ENG_NOMEM;
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

static void seg_drop(wal *w, size_t i)
{
    io_close(w->io, &w->segs[i]->f);
    free(w->segs[i]);
    w->segs[i] = w->segs[--w->nsegs];
}

/* Close segments nobody needs open: synced, not being synced, not current. */
static void seg_cleanup(wal *w)
{
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
static int wr_blocks(wal *w, uint64_t from, uint64_t to, uint8_t *stage, uint32_t stage_len)
{
    uint64_t durable = atomic_load(&w->durable_lsn);
    uint64_t mask = w->seg_size - 1;
    size_t n = 0;
    uint64_t bytes = 0;

    for (uint64_t b = from; b < to; b += WAL_BLOCK)
        wb_seal(w->buf + (b - w->buf_lsn), durable, WAL_BLOCK_SECTORS);
    if (stage)
        wb_seal(stage, durable, (stage_len + WAL_SECTOR - 1) / WAL_SECTOR);

    for (uint64_t a = from; a < to || (stage && a == to); ) {
        uint64_t seg = a & ~mask;
        wal_seg *s;
        int rc = seg_get(w, seg, &s);
        if (rc != ENG_OK)
            return rc;
        io_req *r = &w->reqs[n++];
        if (a < to) {
            uint64_t e = min64(seg + w->seg_size, to);
            *r = (io_req){ .f = &s->f, .buf = w->buf + (a - w->buf_lsn), .len = e - a,
                           .offset = a - seg };
            a = e;
        } else {
            *r = (io_req){ .f = &s->f, .buf = stage, .len = WAL_BLOCK, .offset = a - seg };
            a += WAL_BLOCK;
        }
        bytes += r->len;
    }
    if (n == 0)
        return ENG_OK;
    int rc = io_write_batch(w->io, w->reqs, n);
    if (rc != ENG_OK) {
        wal_poison(w);
        return rc;
    }
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
static size_t reqs_needed(size_t buf_cap, uint64_t seg_size)
{
    return (size_t)(buf_cap / seg_size) + 3;
}

/* ---- appending ------------------------------------------------------------------ */

/* Make the buffer reach END_RAW (ins_mu held): write the full blocks out,
 * slide the partial block to the front, and grow the buffer only when one
 * record is larger than all of it. */
static int make_room(wal *w, uint64_t end_raw)
{
    if (end_raw - w->buf_lsn <= w->buf_cap)
        return ENG_OK;
    pthread_mutex_lock(&w->write_mu);
    int rc = ENG_OK;
    uint64_t ib = blk_of(w->ins);
    if (w->written_full < ib) {
        rc = wr_blocks(w, w->written_full, ib, NULL, 0);
        if (rc == ENG_OK) {
            w->written_full = ib;
            if (w->written_lsn < ib)
                w->written_lsn = ib;
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
        while (ncap < end_raw - w->buf_lsn)
            ncap *= 2;
        size_t nreq = reqs_needed(ncap, w->seg_size);
        uint8_t *nb = realloc(w->buf, ncap);
        io_req *nr = nb ? realloc(w->reqs, nreq * sizeof *nr) : NULL;
        if (nb)
            w->buf = nb;
        if (!nb || !nr) {
            rc = ENG_NOMEM;
        } else {
            memset(nb + w->buf_cap, 0, ncap - w->buf_cap);
            w->buf_cap = ncap;
            w->reqs = nr;
            w->reqs_cap = nreq;
        }
    }
    pthread_mutex_unlock(&w->write_mu);
    return rc;
}

/* Copy N record bytes from SRC to stream position *POS, skipping sector
 * trailers, and starting each block entered with a header whose wb_cont
 * is the record bytes still to come (*LEFT), capped at the payload size. */
static void buf_put(wal *w, uint64_t *pos, const uint8_t *src, size_t n, uint64_t *left)
{
    uint64_t p = *pos;
    while (n > 0) {
        uint32_t so = sec_off(p);
        if (so >= WAL_SECTOR_DATA) {
            p += WAL_SECTOR - so; /* the trailer, filled by wb_seal */
            continue;
        }
        if (blk_off(p) == 0) {
            wb_init(w->buf + (p - w->buf_lsn), p, w->gen, (uint16_t)min64(*left, WB_PAYLOAD));
            p += WAL_BLOCK_HDR;
        }
        size_t c = WAL_SECTOR_DATA - sec_off(p);
        if (c > n)
            c = n;
        memcpy(w->buf + (p - w->buf_lsn), src, c);
        p += c;
        src += c;
        n -= c;
        *left -= c;
    }
    *pos = p;
}

int wal_append(wal *w, int type, const void *payload, size_t len, uint64_t *start, uint64_t *end)
{
    if (type < 1 || type > WAL_REC_TYPE_MAX || len > WAL_MAX_RECORD || (len && !payload))
        return ENG_INVALID;
    if (is_poisoned(w))
        return ENG_POISONED;
    int injected = ENG_FAULT(FP_WAL_APPEND);
    if (injected) {
        wal_poison(w); /* as a failed write of the buffer would */
        return io_status_from_errno(injected);
    }
    uint64_t total = WAL_REC_HDR + len;

    pthread_mutex_lock(&w->ins_mu);
    if (is_poisoned(w)) {
        pthread_mutex_unlock(&w->ins_mu);
        return ENG_POISONED;
    }
    uint64_t pos = w->ins;
    uint64_t lsn = rec_start_at(pos);
    uint64_t end_raw = stream_end(lsn, total);
    int rc = make_room(w, end_raw);
    if (rc != ENG_OK) {
        pthread_mutex_unlock(&w->ins_mu);
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
        if (len)
            XXH3_64bits_update(w->xs, payload, len);
        fmt_put64(hdr + XL_CHECK_OFF, XXH3_64bits_digest(w->xs));
    }

    if (pos != lsn) /* the record opens a block: nothing continues into it */
        wb_init(w->buf + (pos - w->buf_lsn), pos, w->gen, 0);
    uint64_t p = lsn, left = total;
    buf_put(w, &p, hdr, sizeof hdr, &left);
    buf_put(w, &p, payload, len, &left);
    if (one_block) {
        uint8_t *rec = w->buf + (lsn - w->buf_lsn);
        fmt_put64(rec + XL_CHECK_OFF, XXH3_64bits(rec, (size_t)total));
    }
    w->ins = align8(end_raw); /* padding is already zero (B2) */
    w->prev_rec = lsn;
    atomic_store(&w->insert_lsn, w->ins);
    uint64_t e = w->ins;
    pthread_mutex_unlock(&w->ins_mu);

    stat_add(&w->st_records, 1);
    stat_add(&w->st_bytes_appended, total);
    if (start)
        *start = lsn;
    if (end)
        *end = e;
    return ENG_OK;
}

/* ---- write-out and group commit ------------------------------------------------- */

/* Write everything appended so far (the partial last block from a
 * zero-padded copy, W1) and, with SYNC, fsync every segment written since
 * the last sync (all writes completed first, W2) and publish durable_lsn.
 * With SYNC the caller holds the group-commit token.  A snapshot already
 * written by a later write-out is not written again: writing an older copy
 * of the partial block over a newer one would lose bytes. */
static int write_snapshot(wal *w, int sync)
{
    _Alignas(64) uint8_t stage[WAL_BLOCK];

    pthread_mutex_lock(&w->ins_mu);
    uint64_t S = w->ins, Sb = blk_of(S);
    uint32_t off = blk_off(S);
    if (off) {
        memcpy(stage, w->buf + (Sb - w->buf_lsn), off);
        memset(stage + off, 0, WAL_BLOCK - off);
    }
    pthread_mutex_unlock(&w->ins_mu);

    pthread_mutex_lock(&w->write_mu);
    int rc = ENG_OK;
    if (S > w->written_lsn) {
        /* S > written_lsn >= written_full, so Sb >= written_full (B1). */
        rc = wr_blocks(w, w->written_full, Sb, off ? stage : NULL, off);
        if (rc == ENG_OK) {
            w->written_full = Sb;
            w->written_lsn = S;
        }
    }
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
            if (s->dirty) {
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
    pthread_mutex_unlock(&w->write_mu);
    if (!sync || rc != ENG_OK)
        return rc;

    ENG_KILL_POINT(FP_KILL_WAL_WRITE_SYNC);
    /* Outside the locks: appenders go on, and a buffer-full write-out may
     * land in a segment being synced; it is not claimed by this flush. */
    for (size_t i = 0; i < nsync && rc == ENG_OK; i++) {
        rc = io_datasync(w->io, &w->sync_set[i]->f);
        if (rc == ENG_OK)
            stat_add(&w->st_syncs, 1);
    }
    if (rc == ENG_OK && dirsync)
        rc = io_dirsync(w->io, w->waldir);
    if (rc != ENG_OK)
        wal_poison(w); /* never retried (W4) */

    pthread_mutex_lock(&w->write_mu);
    for (size_t i = 0; i < nsync; i++)
        w->sync_set[i]->pins--;
    seg_cleanup(w);
    pthread_mutex_unlock(&w->write_mu);

    if (rc == ENG_OK)
        ENG_KILL_POINT(FP_KILL_WAL_SYNC);
#ifdef ENG_BROKEN_DURABLE_PUBLISHES_INSERT
    /* planted bug (tests/mutants.txt): the flusher publishes the insert
     * position as it is after the fsync, not the snapshot S it wrote and
     * synced: records appended during the fsync count as durable, so their
     * committers return without an fsync of their own (and later witnesses
     * overstate, B3). */
    S = atomic_load(&w->insert_lsn);
#endif
    if (rc == ENG_OK && S > atomic_load(&w->durable_lsn))
        atomic_store(&w->durable_lsn, S); /* only the token holder publishes */
    return rc;
}

int wal_flush(wal *w, uint64_t upto)
{
    if (is_poisoned(w))
        return ENG_POISONED;
    uint64_t ins = atomic_load(&w->insert_lsn);
    if (upto > ins)
        upto = ins; /* records not yet appended cannot be made durable */
    if (atomic_load(&w->durable_lsn) >= upto)
        return ENG_OK;

    pthread_mutex_lock(&w->flush_mu);
    for (;;) {
        if (is_poisoned(w)) {
            pthread_mutex_unlock(&w->flush_mu);
            return ENG_POISONED;
        }
        if (atomic_load(&w->durable_lsn) >= upto) {
            pthread_mutex_unlock(&w->flush_mu); /* a flusher's fsync covered us */
            return ENG_OK;
        }
        if (!w->flushing)
            break;
        pthread_cond_wait(&w->flush_cv, &w->flush_mu);
    }
    w->flushing = 1;
    pthread_mutex_unlock(&w->flush_mu);

    int rc = write_snapshot(w, 1);

    pthread_mutex_lock(&w->flush_mu);
    w->flushing = 0;
    pthread_cond_broadcast(&w->flush_cv);
    pthread_mutex_unlock(&w->flush_mu);
    return rc;
}

int wal_write_out(wal *w)
{
    if (is_poisoned(w))
        return ENG_POISONED;
    return write_snapshot(w, 0);
}

uint64_t wal_insert_lsn(wal *w)
{
    return atomic_load(&w->insert_lsn);
}

uint64_t wal_durable_lsn(wal *w)
{
    return atomic_load(&w->durable_lsn);
}

void wal_get_stats(wal *w, wal_stats *st)
{
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
static int sync_existing(wal *w, uint64_t last)
{
    uint64_t *v;
    size_t n;
    int rc = seg_list(w->waldir, &v, &n);
    for (size_t i = 0; rc == ENG_OK && i < n && v[i] <= last; i++) {
        if (v[i] & (w->seg_size - 1))
            continue; /* not a segment of this size */
        char name[17];
        seg_name(name, v[i]);
        io_file f;
        rc = io_open(w->io, w->waldir, name, seg_file_id(w->seg_size, v[i]), 0, 0, &f);
        if (rc != ENG_OK)
            break;
        rc = io_sync(w->io, &f);
        io_close(w->io, &f);
        if (rc == ENG_OK)
            stat_add(&w->st_syncs, 1);
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
static int load_partial_block(wal *w)
{
    uint64_t b = blk_of(w->ins);
    uint32_t off = blk_off(w->ins);
    wal_seg *s;
    int rc = seg_get(w, b & ~(w->seg_size - 1), &s);
    if (rc != ENG_OK || off == 0)
        return rc;
    size_t done = 0;
    rc = io_read(w->io, &s->f, w->buf, WAL_BLOCK, b - s->base, &done);
    if (rc != ENG_OK)
        return rc;
    memset(w->buf + (done < off ? done : off), 0, WAL_BLOCK - (done < off ? done : off));
    uint16_t cont = 0;
    wb_hdr h;
    uint64_t e, f;
    if (done >= WAL_BLOCK_HDR && !wb_check_at(w->buf, b, &h, &e, &f) &&
        h.cont <= off - WAL_BLOCK_HDR)
        cont = h.cont;
    wb_init(w->buf, b, w->gen, cont);
    return ENG_OK;
}

void wal_close(wal *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nsegs; i++) {
        io_close(w->io, &w->segs[i]->f);
        free(w->segs[i]);
    }
    free(w->segs);
    free(w->sync_set);
    free(w->reqs);
    free(w->buf);
    if (w->xs)
        XXH3_freeState(w->xs);
    pthread_mutex_destroy(&w->flush_mu);
    pthread_cond_destroy(&w->flush_cv);
    pthread_mutex_destroy(&w->ins_mu);
    pthread_mutex_destroy(&w->write_mu);
    free(w->dir);
    free(w->waldir);
    free(w->archive_dir);
    free(w);
}

int wal_open(const wal_config *cfg, wal **out)
{
    *out = NULL;
    if (!cfg || !cfg->io || !cfg->dir || !valid_seg_size(cfg->seg_size) ||
        cfg->buffer_size < 4 * WAL_BLOCK || cfg->buffer_size % WAL_BLOCK ||
        !valid_stream_pos(cfg->start_lsn) || (cfg->prev_lsn && cfg->prev_lsn >= cfg->start_lsn))
        return ENG_INVALID;
    wal *w = calloc(1, sizeof *w);
    if (!w)
        return ENG_NOMEM;
    pthread_mutex_init(&w->flush_mu, NULL);
    pthread_cond_init(&w->flush_cv, NULL);
    pthread_mutex_init(&w->ins_mu, NULL);
    pthread_mutex_init(&w->write_mu, NULL);
    w->io = cfg->io;
    w->seg_size = cfg->seg_size;
    w->gen = cfg->gen;
    w->rep = cfg->reporter;
    w->dir = strdup(cfg->dir);
    w->waldir = path_join(cfg->dir, WAL_DIR);
    w->archive_dir = cfg->archive_dir ? strdup(cfg->archive_dir) : NULL;
    w->buf_cap = cfg->buffer_size;
    w->buf = calloc(1, w->buf_cap);
    w->reqs_cap = reqs_needed(w->buf_cap, w->seg_size);
    w->reqs = calloc(w->reqs_cap, sizeof *w->reqs);
    w->xs = XXH3_createState();
    int rc = ENG_OK;
    if (!w->dir || !w->waldir || (cfg->archive_dir && !w->archive_dir) || !w->buf || !w->reqs ||
        !w->xs)
        rc = ENG_NOMEM;

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
    if (rc == ENG_OK)
        rc = sync_existing(w, w->cur_seg);
    if (rc == ENG_OK)
        rc = load_partial_block(w);
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
static int archive_copy(wal *w, const char *name, uint64_t base, uint8_t *tmp)
{
    io_file src, dst;
    int rc = io_open(w->io, w->waldir, name, seg_file_id(w->seg_size, base), 0, 1, &src);
    if (rc != ENG_OK)
        return rc;
    rc = io_open(w->io, w->archive_dir, name, -1, 1, 0, &dst);
    if (rc != ENG_OK) {
        io_close(w->io, &src);
        return rc;
    }
    uint64_t off = 0;
    for (;;) {
        size_t done = 0;
        rc = io_read(w->io, &src, tmp, ARCHIVE_CHUNK, off, &done);
        if (rc != ENG_OK || done == 0)
            break;
        rc = io_write(w->io, &dst, tmp, done, off);
        if (rc != ENG_OK)
            break;
        off += done;
        if (done < ARCHIVE_CHUNK)
            break;
    }
    if (rc == ENG_OK)
        rc = io_truncate(w->io, &dst, off); /* an older, longer copy */
    if (rc == ENG_OK)
        rc = io_sync(w->io, &dst);
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
int wal_remove_before(wal *w, uint64_t lsn)
{
    if (is_poisoned(w))
        return ENG_POISONED;
    uint64_t limit = min64(lsn, atomic_load(&w->durable_lsn));
    uint64_t *v;
    size_t n;
    int rc = seg_list(w->waldir, &v, &n);
    if (rc != ENG_OK)
        return rc;
    size_t ncand = 0;
    for (size_t i = 0; i < n; i++)
        if ((v[i] & (w->seg_size - 1)) == 0 && v[i] + w->seg_size <= limit)
            v[ncand++] = v[i]; /* ascending, in place */
    if (ncand == 0) {
        free(v);
        return ENG_OK;
    }

    if (w->archive_dir) {
        uint8_t *tmp = malloc(ARCHIVE_CHUNK);
        if (!tmp)
            rc = ENG_NOMEM;
        for (size_t i = 0; rc == ENG_OK && i < ncand; i++) {
            char name[17];
            seg_name(name, v[i]);
            rc = archive_copy(w, name, v[i], tmp);
        }
        free(tmp);
        if (rc == ENG_OK)
            rc = io_dirsync(w->io, w->archive_dir);
        if (rc != ENG_OK) {
            free(v);
            return rc;
        }
    }

    int changed = 0;
    pthread_mutex_lock(&w->write_mu);
    uint64_t *all;
    size_t nall;
    rc = seg_list(w->waldir, &all, &nall);
    if (rc == ENG_OK) {
        uint64_t cur = atomic_load(&w->insert_lsn) & ~(w->seg_size - 1);
        uint64_t top = cur;
        int spares = 0;
        for (size_t i = 0; i < nall; i++) {
            if (all[i] > cur && (all[i] & (w->seg_size - 1)) == 0)
                spares++;
            if (all[i] > top && (all[i] & (w->seg_size - 1)) == 0)
                top = all[i];
        }
        free(all);
        for (size_t i = 0; rc == ENG_OK && i < ncand; i++) {
            int busy = 0;
            for (size_t j = 0; j < w->nsegs; j++)
                if (w->segs[j]->base == v[i]) {
                    if (w->segs[j]->dirty || w->segs[j]->pins)
                        busy = 1; /* cannot happen below durable_lsn; keep it */
                    else
                        seg_drop(w, j);
                    break;
                }
            if (busy)
                continue;
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
                if (rc == ENG_NOTFOUND)
                    rc = ENG_IOERR; /* listed a moment ago: someone else's doing */
                if (rc == ENG_OK)
                    stat_add(&w->st_segments_removed, 1);
            }
            changed |= rc == ENG_OK;
        }
    }
    pthread_mutex_unlock(&w->write_mu);
    free(v);
    if (changed) {
        int rc2 = io_dirsync(w->io, w->waldir);
        if (rc == ENG_OK)
            rc = rc2;
    }
    return rc;
}

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

    uint64_t pos;       /* where the next record goes (may be a block start) */
    uint64_t prev;      /* xl_prev the next record must carry (0: unchecked) */
    uint64_t end, last_lsn;
    uint32_t gen;       /* generation of the last valid block along the log */
    uint32_t max_gen;
    uint64_t vblock;    /* last block validated along the log */
    int done, status, trimmed;

    /* the first failure: where the log ends (L) and why */
    uint64_t fail_lsn, fail_block;
    const char *fail_why;
    uint64_t fail_expected, fail_found;
    uint64_t fail_end;  /* end of the failing record's bytes (W3a checks up to here) */
    int fail_block_bad; /* L's own block header was the problem */
    uint64_t fail_seg;  /* the segment the walk needed next ... */
    int fail_seg_missing; /* ... has no file */
    uint64_t cur_len;   /* bytes of the record being read known so far:
                           its header, then its length once read and sane */

    uint8_t *rec;
    size_t rec_cap;
};

static int rd_seg_open(wal_reader *r, uint64_t base)
{
    if (r->f_state && r->f_base == base)
        return ENG_OK;
    if (r->f_state == 1)
        io_close(r->io, &r->f);
    r->f_state = 0;
    r->win_len = 0;
    char name[17];
    seg_name(name, base);
    int rc = io_open(r->io, r->waldir, name, seg_file_id(r->seg_size, base), 0, 1, &r->f);
    if (rc != ENG_OK) {
        if (seg_exists(r->waldir, base))
            return rc; /* there but unreadable: an I/O error, not the end */
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
static int rd_block(wal_reader *r, uint64_t b, const uint8_t **p)
{
    *p = NULL;
    if (r->win_len && b >= r->win_lsn && b - r->win_lsn < r->win_len) {
        *p = r->win + (b - r->win_lsn);
        return ENG_OK;
    }
    uint64_t base = b & ~(r->seg_size - 1);
    int rc = rd_seg_open(r, base);
    if (rc != ENG_OK || r->f_state != 1)
        return rc;
    size_t want = (size_t)min64(RD_CHUNK, base + r->seg_size - b), done = 0;
    r->win_len = 0;
    rc = io_read(r->io, &r->f, r->win, want, b - base, &done);
    if (rc != ENG_OK || done == 0)
        return rc;
    size_t full = (done + WAL_BLOCK - 1) & ~(size_t)(WAL_BLOCK - 1);
    memset(r->win + done, 0, full - done);
    r->win_lsn = b;
    r->win_eof = done < want ? b + done : UINT64_MAX;
    r->win_len = full;
    *p = r->win;
    return ENG_OK;
}

/* Record that the log ends at record position L for reason WHY. */
static int rd_fail(wal_reader *r, uint64_t L, uint64_t block, const char *why, uint64_t expected,
                   uint64_t found, int block_bad)
{
    r->fail_lsn = L;
    r->fail_end = stream_end(L, r->cur_len);
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
static int rd_enter(wal_reader *r, uint64_t b, uint64_t L, const uint8_t **p)
{
    int rc = rd_block(r, b, p);
    if (rc != ENG_OK)
        return rc;
    if (!*p) {
        rd_fail(r, L, b, "is missing (the log ends)", 0, 0, 1);
        /* Past the end of a segment file, or no file at all: only the
         * second can be a lost file (W3 then names it if later blocks
         * prove the log went on). */
        r->fail_seg = b & ~(r->seg_size - 1);
        r->fail_seg_missing = r->f_state == 2 && r->f_base == r->fail_seg;
        return RD_END;
    }
    if (b == r->vblock)
        return ENG_OK;
    wb_hdr h;
    uint64_t e = 0, f = 0;
    const char *why = wb_check_at(*p, b, &h, &e, &f);
    if (why)
        return rd_fail(r, L, b, why, e, f, 1);
    if (h.gen < r->gen)
        return rd_fail(r, L, b, "lies in a block of an older generation", r->gen, h.gen, 1);
    r->gen = h.gen;
    if (h.gen > r->max_gen)
        r->max_gen = h.gen;
    r->vblock = b;
    return ENG_OK;
}

static int rd_grow(wal_reader *r, size_t need)
{
    if (need <= r->rec_cap)
        return ENG_OK;
    size_t cap = r->rec_cap;
    while (cap < need)
        cap *= 2;
    uint8_t *n = realloc(r->rec, cap);
    if (!n)
        return ENG_NOMEM;
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
static int rd_copy(wal_reader *r, uint64_t L, uint64_t *pos, uint8_t *dst, size_t n, uint64_t len,
                   size_t done, uint64_t *entered, size_t *entered_at)
{
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
            if (rc != ENG_OK)
                return rc;
            if (len) {
                uint64_t want = min64(len - done, WB_PAYLOAD);
                if (fmt_get16(p + WB_CONT_OFF) != want)
                    return rd_fail(r, L, x, "runs into a block whose continuation length is wrong",
                                   want, fmt_get16(p + WB_CONT_OFF), 0);
            } else if (*entered == UINT64_MAX) {
                *entered = x;
                *entered_at = done;
            }
            x += WAL_BLOCK_HDR;
        } else {
            rc = rd_block(r, blk_of(x), &p);
            if (rc != ENG_OK)
                return rc;
            if (!p) /* cannot happen: the block was entered already */
                return rd_fail(r, L, blk_of(x), "is missing (the log ends)", 0, 0, 0);
        }
        size_t c = WAL_SECTOR_DATA - sec_off(x);
        if (c > n)
            c = n;
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
static int rd_record(wal_reader *r, wal_record *out)
{
    uint64_t L = rec_start_at(r->pos);
    uint64_t b = blk_of(L);
    uint32_t off = blk_off(L);
    const uint8_t *p;
    r->cur_len = WAL_REC_HDR;
    int rc = rd_enter(r, b, L, &p);
    if (rc != ENG_OK)
        return rc;
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
    if (rc != ENG_OK)
        return rc;
    if (all_zero(h, WAL_REC_HDR))
        return rd_fail(r, L, b, "is absent (zero header)", 0, 0, 0);
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
    if (xlsn != L)
        return rd_fail(r, L, b, "carries another position", L, xlsn, 0);
    if (r->prev && xprev != r->prev)
        return rd_fail(r, L, b, "does not follow the previous record", r->prev, xprev, 0);
    if (straddle != UINT64_MAX) {
        rc = rd_block(r, straddle, &p);
        if (rc != ENG_OK)
            return rc;
        uint64_t want = min64(len - got, WB_PAYLOAD);
        if (p && fmt_get16(p + WB_CONT_OFF) != want)
            return rd_fail(r, L, straddle, "runs into a block whose continuation length is wrong",
                           want, fmt_get16(p + WB_CONT_OFF), 0);
    }

    /* payload */
    rc = rd_grow(r, len);
    if (rc != ENG_OK)
        return rc;
    rc = rd_copy(r, L, &pos, r->rec + WAL_REC_HDR, len - WAL_REC_HDR, len, WAL_REC_HDR, NULL, NULL);
    if (rc != ENG_OK)
        return rc;
    fmt_put64(r->rec + XL_CHECK_OFF, 0);
    uint64_t sum = XXH3_64bits(r->rec, len);
    if (sum != xcheck)
        return rd_fail(r, L, b, "fails its checksum", xcheck, sum, 0);
    /* Padding up to the next 8-aligned position: zero, except a trailer
     * it may reach (a sector's data ends at 508, not 8-aligned). */
    uint64_t end = align8(pos);
    if (end != pos && sec_off(pos) < WAL_SECTOR_DATA) {
        uint64_t stop = min64(end, (pos & ~(uint64_t)(WAL_SECTOR - 1)) + WAL_SECTOR_DATA);
        rc = rd_block(r, blk_of(pos), &p);
        if (rc != ENG_OK)
            return rc;
        if (p && !all_zero(p + blk_off(pos), (size_t)(stop - pos))) {
            rd_fail(r, L, blk_of(pos), "is followed by non-zero padding", 0, 0, 0);
            r->fail_end = stop;
            return RD_END;
        }
    }

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
static int data_zero_from(const uint8_t *p, uint32_t from)
{
    for (uint32_t x = from; x < WAL_BLOCK;) {
        uint32_t so = x % WAL_SECTOR;
        if (so >= WAL_SECTOR_DATA) {
            x += WAL_SECTOR - so;
            continue;
        }
        uint32_t n = WAL_SECTOR_DATA - so;
        if (!all_zero(p + x, n))
            return 0;
        x += n;
    }
    return 1;
}

/* The report for the log stopping at L on damage found at BAD (a sector,
 * or the block whose witness is above L): named by L's segment, block and
 * offset, with the span in blocks from L's block to BAD's (where the
 * damage may lie) as the entry. */
static int rd_report(wal_reader *r, uint64_t bad, uint64_t expected, uint64_t found, const char *tail)
{
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
static int rd_check_sectors(wal_reader *r)
{
    uint64_t L = r->fail_lsn;
    uint64_t from = r->fail_block_bad ? blk_of(L) : L & ~(uint64_t)(WAL_SECTOR - 1);
    uint64_t to = r->fail_end > L ? r->fail_end : L + 1;
    for (uint64_t x = from; x < to; x += WAL_SECTOR) {
        const uint8_t *p;
        int rc = rd_block(r, blk_of(x), &p);
        if (rc != ENG_OK)
            return rc;
        if (!p) {
            x = blk_of(x) + WAL_BLOCK - WAL_SECTOR; /* no such block: nothing to damage */
            continue;
        }
        if (x < r->win_eof && r->win_eof < x + WAL_SECTOR)
            continue;
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
static int rd_conclude(wal_reader *r)
{
    int rc = rd_check_sectors(r);
    if (rc != ENG_OK)
        return rc;
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
    rc = seg_list(r->waldir, &segs, &nsegs);
    if (rc != ENG_OK)
        return rc;
    for (size_t si = 0; si < nsegs; si++) {
        uint64_t seg = segs[si];
        if (seg < seg0 || (seg & mask))
            continue;
        if (!cross_gaps) {
            /* L's own segment may be the missing one */
            if (seg != next && !(next == seg0 && seg == seg0 + r->seg_size))
                break;
            next = seg + r->seg_size;
        }
        rc = rd_seg_open(r, seg);
        if (rc != ENG_OK)
            break;
        if (r->f_state != 1)
            continue; /* gone since it was listed */
        for (uint64_t x = seg == seg0 ? b0 : seg; x < seg + r->seg_size; x += WAL_BLOCK) {
            const uint8_t *p;
            rc = rd_block(r, x, &p);
            if (rc != ENG_OK)
                break;
            if (!p)
                break;
            if (seg == seg0 && !trimmed) {
                uint32_t from = (x == b0 && !r->fail_block_bad) ? blk_off(L) : 0;
                trimmed = !data_zero_from(p, from);
            }
            wb_hdr h;
            uint64_t e, f;
            if (wb_check_at(p, x, &h, &e, &f))
                continue;
            if (h.gen > r->max_gen)
                r->max_gen = h.gen;
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
        if (rc != ENG_OK)
            break;
    }
    free(segs);
    if (rc != ENG_OK)
        return rc;
    r->trimmed = trimmed;
    return ENG_NOTFOUND;
}

int wal_reader_open(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t start_lsn,
                    uint64_t prev_lsn, const eng_reporter *rep, wal_reader **out)
{
    *out = NULL;
    if (!io || !dir || !valid_seg_size(seg_size) || !valid_stream_pos(start_lsn))
        return ENG_INVALID;
    wal_reader *r = calloc(1, sizeof *r);
    if (!r)
        return ENG_NOMEM;
    r->io = io;
    r->seg_size = seg_size;
    if (rep)
        r->rep = *rep;
    r->waldir = path_join(dir, WAL_DIR);
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

int wal_reader_next(wal_reader *r, wal_record *rec)
{
    if (r->done)
        return r->status;
    int rc = rd_record(r, rec);
    if (rc == ENG_OK)
        return ENG_OK;
    if (rc == RD_END)
        rc = rd_conclude(r);
    r->done = 1;
    r->status = rc;
    return rc;
}

void wal_reader_end(wal_reader *r, uint64_t *end, uint64_t *last_lsn, uint32_t *max_gen, int *trimmed)
{
    if (end)
        *end = r->end;
    if (last_lsn)
        *last_lsn = r->last_lsn;
    if (max_gen)
        *max_gen = r->max_gen;
    if (trimmed)
        *trimmed = r->trimmed;
}

void wal_reader_close(wal_reader *r)
{
    if (!r)
        return;
    if (r->f_state == 1)
        io_close(r->io, &r->f);
    free(r->waldir);
    free(r->win);
    free(r->rec);
    free(r);
}

/* ---- tools ------------------------------------------------------------------------ */

uint64_t wal_guess_seg_size(const char *dir)
{
    char *waldir = path_join(dir, WAL_DIR);
    if (!waldir)
        return 0;
    uint64_t *v;
    size_t n;
    uint64_t guess = 0;
    if (seg_list(waldir, &v, &n) == ENG_OK && n > 0) {
        if (n >= 2) {
            for (size_t i = 1; i < n; i++) {
                uint64_t d = v[i] - v[i - 1];
                if (d && (!guess || d < guess))
                    guess = d;
            }
            /* a gap makes the smallest step a multiple of the size: keep
             * the power of two that divides it */
            guess &= ~guess + 1;
        } else {
            char name[17];
            seg_name(name, v[0]);
            char *path = path_join(waldir, name);
            struct stat st;
            if (path && stat(path, &st) == 0) {
                uint64_t size = (uint64_t)st.st_size;
                guess = 64u << 10; /* the smallest legal size */
                while (guess < size)
                    guess <<= 1;
            }
            free(path);
        }
    }
    free(v);
    free(waldir);
    return guess;
}

int wal_list_segments(const char *dir, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *waldir = path_join(dir, WAL_DIR);
    if (!waldir)
        return ENG_NOMEM;
    int rc = seg_list(waldir, out, n);
    free(waldir);
    return rc;
}

int wal_check_segments(const char *dir, uint64_t seg_size, uint64_t from, uint64_t to,
                       const eng_reporter *rep)
{
    if (!valid_seg_size(seg_size) || to < from)
        return ENG_INVALID;
    uint64_t *v;
    size_t n;
    int rc = wal_list_segments(dir, &v, &n);
    if (rc != ENG_OK)
        return rc;
    uint64_t mask = seg_size - 1;
    for (uint64_t s = from & ~mask; s <= (to & ~mask) && rc == ENG_OK; s += seg_size) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = v[i] == s;
        if (found)
            continue;
        char name[17], file[64];
        seg_name(name, s);
        snprintf(file, sizeof file, "%s/%s", WAL_DIR, name);
        rc = eng_report(rep, ENG_LAYER_WAL, file, -1, -1, -1, s, 0,
                        "WAL segment %s is missing: the log from the redo point 0x%llx to the "
                        "checkpoint record 0x%llx that control names must be whole",
                        file, (unsigned long long)from, (unsigned long long)to);
    }
    free(v);
    return rc;
}

int wal_remove_segments(io_ctx *io, const char *dir)
{
    uint64_t *v;
    size_t n;
    int rc = wal_list_segments(dir, &v, &n);
    if (rc != ENG_OK)
        return rc;
    char *waldir = path_join(dir, WAL_DIR);
    if (!waldir)
        rc = ENG_NOMEM;
    for (size_t i = 0; i < n && rc == ENG_OK; i++) {
        char name[17];
        seg_name(name, v[i]);
        rc = io_unlink(io, waldir, name);
        if (rc == ENG_NOTFOUND) rc = ENG_OK; /* gone already: what we wanted */
    }
    free(waldir);
    free(v);
    return rc;
}
