/*
 * walsweep.c -- the log sweep's sites (faults.h, flt_wal_sweep_sites):
 * where, in a stretch of log that a recovery replayed whole, one flipped
 * bit must make that recovery report damage.
 *
 * A bit flipped in a record's byte fails its sector's own check (the
 * trailer's CRC32C covers every byte of the sector but the trailer), and
 * the reader meets it: every record of the stretch is read, and so is
 * every block header around them (each has a check of its own).  A power loss keeps or loses 512-byte
 * sectors whole, so no torn write looks like that; a recovery that takes
 * it for a torn tail cuts records that were on disk.  The sites are
 * sectors holding record bytes, newest first (the tail, where a reader
 * decides between torn and damaged, and where the witnesses of W3b are
 * fewest), then older ones drawn; in each, a region present (record
 * header, payload, block header) drawn alike, then a byte of it and a
 * bit.  A quarter of the trials first zero a whole sector instead, where
 * a later block on disk witnesses its record durable: a sector read back
 * as zeros passes its own check, as a lost write would, and only the
 * witness rule (W3b) can tell it from a torn tail.
 * Reads the segment; writes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "faults.h"
#include "format.h"
#include "walview.h"

/* The regions a sweep flips: every byte the reader relies on.  Not a
 * sector's trailer: the records it covers still pass their own checksums,
 * so the trailer is read only when one fails, to tell a tear from damage
 * (W3a), and a flip there alone changes nothing the log says; nor padding
 * past a block's last record, never read. */
static const int swept[] = {FLT_WR_RECORD_HEADER, FLT_WR_RECORD_PAYLOAD, FLT_WR_BLOCK_HEADER};
#define NSWEPT (sizeof swept / sizeof *swept)

/* Bytes of records in [A, B) of V: a sector the sweep visits holds some. */
static uint64_t record_bytes(const flt_wal_view *v, uint64_t a, uint64_t b) {
    return flt_wal_view_count(v, a, b, FLT_WR_RECORD_HEADER) + flt_wal_view_count(v, a, b, FLT_WR_RECORD_PAYLOAD);
}

/* A site in [A, B) of V, drawn from *R: a region present there first,
 * each alike (a block header's few bytes as likely as a record's
 * payload), then a byte of it and a bit. */
static flt_sweep_site site_in(const flt_wal_view *v, uint64_t a, uint64_t b, uint64_t *r) {
    uint64_t cnt[NSWEPT], present = 0;
    for (size_t i = 0; i < NSWEPT; i++) present += (cnt[i] = flt_wal_view_count(v, a, b, swept[i])) != 0;
    *r = rng_mix64(*r);
    uint64_t k = *r % present;
    size_t i = 0;
    while (!cnt[i] || k-- > 0) i++; /* the K-th region present */
    *r = rng_mix64(*r);
    flt_sweep_site s = {.zero = 0};
    s.off = flt_wal_view_nth(v, a, b, swept[i], *r % cnt[i]);
    s.block = s.off / WAL_BLOCK;
    s.region = flt_wal_region_name(swept[i]);
    s.bit = (int)((*r >> 32) % 8);
    return s;
}

/* Up to CAP sectors of V in [LO, HI) zeroed whole, newest first: those a
 * later block of V on disk witnesses durable (walzero.c's candidates),
 * whose loss only the witness rule (W3b) can tell from a torn tail. */
static size_t zero_sites(const flt_wal_view *v, uint64_t lo, uint64_t hi, flt_sweep_site *out, size_t cap) {
    uint64_t cand[64];
    size_t n = 0, m = flt_wal_zero_candidates(v, hi, cand, cap < 64 ? cap : 64);
    for (size_t i = 0; i < m; i++)
        if (cand[i] >= lo) /* its records are ones the recovery reads */
            out[n++] =
                (flt_sweep_site){.off = cand[i], .block = cand[i] / WAL_BLOCK, .zero = 1, .region = "synced_sector"};
    return n;
}

size_t flt_wal_sweep_sites(const char *db_dir, const char *rel, uint64_t lo, uint64_t hi, uint64_t seed,
                           flt_sweep_site *out, size_t cap) {
    flt_wal_view v;
    if (!cap || hi <= lo || !flt_wal_view_load(db_dir, rel, lo, hi - lo, &v)) return 0;
    if (hi > v.size) hi = v.size;
    uint64_t r = rng_mix64(seed ^ 0x7377656570000000ull), first = lo / WAL_SECTOR * WAL_SECTOR;
    size_t n = zero_sites(&v, (lo + WAL_SECTOR - 1) / WAL_SECTOR * WAL_SECTOR, hi, out, cap / 4);
    size_t nsec = hi > first ? (size_t)((hi - first + WAL_SECTOR - 1) / WAL_SECTOR) : 0;
    size_t newest = n + (cap - n) - (cap - n) / 4;
    uint64_t *older = nsec ? malloc(nsec * sizeof *older) : NULL;
    size_t nold = 0;
    /* Newest first; the older sectors with record bytes kept to draw from. */
    for (size_t i = nsec; i-- > 0 && older;) {
        uint64_t s = first + (uint64_t)i * WAL_SECTOR, a = s < lo ? lo : s,
                 b = s + WAL_SECTOR < hi ? s + WAL_SECTOR : hi;
        if (!record_bytes(&v, a, b)) continue;
        if (n < newest)
            out[n++] = site_in(&v, a, b, &r);
        else
            older[nold++] = s;
    }
    while (n < cap && nold) { /* drawn without repetition */
        r = rng_mix64(r);
        size_t k = (size_t)(r % nold);
        uint64_t s = older[k], a = s < lo ? lo : s, b = s + WAL_SECTOR < hi ? s + WAL_SECTOR : hi;
        older[k] = older[--nold];
        out[n++] = site_in(&v, a, b, &r);
    }
    free(older);
    flt_wal_view_free(&v);
    return n;
}
