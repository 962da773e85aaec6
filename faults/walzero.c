/*
 * walzero.c -- bitflip_wal's other damage at the crash: a sector of the
 * synced log lost as zeros, where a block written later says it was
 * durable.
 *
 * A flipped bit fails its sector's own check (the trailer's CRC32C), so
 * the reader reports it at once (engine/wal.h W3a) and never asks whether
 * the record was synced.  A sector that reads back all zero passes that
 * check (a sector never written is zero throughout), exactly as a write
 * the disk acknowledged and lost would: then only the witnesses decide
 * (W3b), the durable marks in the headers of later blocks, and of the
 * record's own block when it was rewritten after the record was synced.
 * This is the damage that reaches that rule.  It is made only where a
 * witness exists and is itself synced, so the engine must report it:
 * without one, the loss is indistinguishable from a torn tail, and no
 * check could tell (the class never makes that case).
 *
 * The block headers are read by engine/format.h's layout here, on their
 * own: the witness is found without the engine's reader.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "format.h"
#include "inject_int.h"
#include "walview.h"

/* A block header of V at file offset X: its durable mark and generation
 * when it is valid at its own position (magic, check, LSN), else 0. */
static int header_at(const flt_wal_view *v, uint64_t seg_base, uint64_t x, uint64_t *durable, uint32_t *gen) {
    if (x < v->lo || x + WAL_BLOCK_HDR > v->lo + v->n) return 0;
    const uint8_t *h = v->buf + (x - v->lo);
    if (fmt_get16(h + WB_MAGIC_OFF) != WB_MAGIC) return 0;
    if (fmt_get64(h + WB_CHECK_OFF) != XXH3_64bits(h, WB_CHECKED)) return 0;
    if (fmt_get64(h + WB_LSN_OFF) != seg_base + x) return 0;
    *durable = fmt_get64(h + WB_DURABLE_OFF);
    *gen = fmt_get32(h + WB_GEN_OFF);
    return 1;
}

/* 1 if a record byte of V in [A, B) is not zero. */
static int nonzero_record_bytes(const flt_wal_view *v, uint64_t a, uint64_t b) {
    for (uint64_t o = a; o < b; o++) {
        int l = v->lab[o - v->lo];
        if ((l == FLT_WR_RECORD_HEADER || l == FLT_WR_RECORD_PAYLOAD) && v->buf[o - v->lo]) return 1;
    }
    return 0;
}

/* The start (file offset) of the first record that zeroing sector S
 * changes, one of its bytes there not zero already, or UINT64_MAX: the
 * record the reader fails on.  A record whose bytes in S are all zero (an
 * image's free space, a zero-filled value) reads the same afterwards and
 * passes; the sector's trailer is no record's. */
static uint64_t first_record_in(const flt_wal_view *v, uint64_t s) {
    for (size_t i = 0; i < v->nrec; i++) {
        uint64_t a = v->recs[i].start > s ? v->recs[i].start : s;
        uint64_t b = v->recs[i].end < s + WAL_SECTOR ? v->recs[i].end : s + WAL_SECTOR;
        if (a < b && nonzero_record_bytes(v, a, b)) return v->recs[i].start;
    }
    return UINT64_MAX;
}

#define WITNESS_SPAN (256u << 10)

/* Where witnesses may be: the victim's own stretch of segment (V, whose
 * first LSN is BASE, synced below END) and, for a victim at the end of a
 * segment, the first blocks of a later segment that holds the last
 * synced write (W, W_BASE, W_END; W.n == 0 when none). */
typedef struct zero_scope {
    const flt_wal_view *v, *w;
    uint64_t base, end, w_base, w_end;
} zero_scope;

/* 1 if a synced block at or after L's (a file offset of Z->v) witnesses
 * L durable: valid at its position, of L's block's generation or newer,
 * its durable mark above L's LSN. */
static int witnessed(const zero_scope *z, uint64_t l) {
    uint64_t d, lsn = z->base + l;
    uint32_t g0, g;
    if (!header_at(z->v, z->base, l / WAL_BLOCK * WAL_BLOCK, &d, &g0)) return 0;
    for (uint64_t x = l / WAL_BLOCK * WAL_BLOCK; x + WAL_BLOCK_HDR <= z->end; x += WAL_BLOCK)
        if (header_at(z->v, z->base, x, &d, &g) && g >= g0 && d > lsn) return 1;
    for (uint64_t x = 0; z->w->n && x + WAL_BLOCK_HDR <= z->w_end; x += WAL_BLOCK)
        if (header_at(z->w, z->w_base, x, &d, &g) && g >= g0 && d > lsn) return 1;
    return 0;
}

/* 1 if sector S of Z->v may be zeroed: a record it changes (not all
 * zero there already), all of it synced, not a block's first sector (its
 * header would go with it), and the record the reader fails on starts in
 * its block or the one before (the report names that block) and is
 * witnessed. */
static int candidate(const zero_scope *z, uint64_t s) {
    const flt_wal_view *v = z->v;
    if (s % WAL_BLOCK == 0 || s + WAL_SECTOR > z->end || s < v->lo || s + WAL_SECTOR > v->lo + v->n) return 0;
    uint64_t l = first_record_in(v, s);
    if (l == UINT64_MAX || l < v->lo || s / WAL_BLOCK - l / WAL_BLOCK > 1) return 0;
    return witnessed(z, l);
}

size_t flt_wal_zero_candidates(const flt_wal_view *v, uint64_t end, uint64_t *out, size_t cap) {
    flt_wal_view none;
    memset(&none, 0, sizeof none);
    zero_scope z = {.v = v, .w = &none, .base = strtoull(v->rel + 4, NULL, 16), .end = end < v->size ? end : v->size};
    size_t n = 0;
    for (uint64_t s = z.end / WAL_SECTOR * WAL_SECTOR; s >= WAL_SECTOR + v->lo && n < cap;) {
        s -= WAL_SECTOR;
        if (candidate(&z, s)) out[n++] = s;
    }
    return n;
}

/* Zero sector S of Z->v and write its ledger line. */
static void zero_sector(flt_ctx *f, flt_thr *t, const flt_wal_view *v, uint64_t s) {
    static const uint8_t zero[WAL_SECTOR];
    uint64_t blk = s / WAL_BLOCK * WAL_BLOCK;
    flt_event e = flt_event_for(f, t, FLT_BITFLIP_WAL, "crash/wal");
    e.file = v->rel;
    e.block = (int64_t)(s / WAL_BLOCK);
    e.offset = (int64_t)blk;
    e.len = (int64_t)(v->size - blk < WAL_BLOCK ? v->size - blk : WAL_BLOCK);
    e.bit = (int64_t)((s - blk) * 8);
    e.region = "synced_sector";
    e.note = "at the crash: a synced sector lost as zeros, a later block witnessing it durable";
    if (flt_record(f, FLT_BITFLIP_WAL, &e) != 0) return; /* FL1: no line, no fault */
    int fd = open(v->path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (pwrite(fd, zero, sizeof zero, (off_t)s) != (ssize_t)sizeof zero) {}
    close(fd);
}

/* Zero one drawn candidate sector of Z->v (each sector judged once).
 * 1 if one was. */
static int zero_one(flt_ctx *f, flt_thr *t, const zero_scope *z) {
    uint64_t cap = z->end > z->v->lo ? (z->end - z->v->lo) / WAL_SECTOR : 0, n = 0;
    uint64_t *cand = cap ? malloc(cap * sizeof *cand) : NULL;
    if (!cand) return 0;
    for (uint64_t s = z->v->lo; s + WAL_SECTOR <= z->end; s += WAL_SECTOR)
        if (candidate(z, s)) cand[n++] = s;
    if (n) zero_sector(f, t, z->v, cand[flt_below(f, t, FLT_BITFLIP_WAL, n)]);
    free(cand);
    return n > 0;
}

/* The victims: the last synced write (and the blocks before it), its own
 * later blocks the witnesses; or, half the time when the log crossed
 * into a later segment before that write, the last write to the segment
 * before (the edge), witnessed by the synced blocks of the later one. */
int flt_wal_zero_at_crash(flt_ctx *f, flt_thr *t) {
    char sync[24], edge[24];
    pthread_mutex_lock(&f->dmg_mu);
    memcpy(sync, f->wal_sync_name, sizeof sync);
    memcpy(edge, f->wal_edge_name, sizeof edge);
    uint64_t soff = f->wal_sync_off, slen = f->wal_sync_len, eoff = f->wal_edge_off, elen = f->wal_edge_len;
    pthread_mutex_unlock(&f->dmg_mu);
    if (!sync[0] || !slen) return 0;
    int at_edge = flt_below(f, t, FLT_BITFLIP_WAL, 2) == 0 && edge[0] && elen && strcmp(edge, sync) < 0;
    flt_wal_view v, w;
    memset(&w, 0, sizeof w);
    if (!flt_wal_view_load(f->db_dir, at_edge ? edge : sync, at_edge ? eoff : soff, at_edge ? elen : slen, &v))
        return 0;
    zero_scope z = {.v = &v, .w = &w, .base = strtoull(v.rel + 4, NULL, 16)};
    uint64_t end = at_edge ? eoff + elen : soff + slen;
    z.end = end < v.size ? end : v.size;
    /* The later segment's blocks from its start, up to WITNESS_SPAN of
     * them: a witness is any synced header there with a mark past L. */
    uint64_t wend = soff + slen < WITNESS_SPAN ? soff + slen : WITNESS_SPAN;
    if (at_edge && flt_wal_view_load(f->db_dir, sync, 0, wend, &w)) {
        z.w_base = strtoull(w.rel + 4, NULL, 16);
        z.w_end = wend < w.size ? wend : w.size;
    }
    int done = zero_one(f, t, &z);
    flt_wal_view_free(&v);
    if (w.buf) flt_wal_view_free(&w);
    return done;
}
