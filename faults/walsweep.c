/*
 * walsweep.c -- the log sweep's sites (faults.h, flt_wal_sweep_sites):
 * where, in a stretch of log that a recovery replayed whole, one flipped
 * bit must make that recovery report damage.
 *
 * A bit flipped in a record's byte fails its sector's own check (the
 * trailer's CRC32C covers every byte of the sector but the trailer), and
 * the reader meets it: every record of the stretch is read.  A power loss
 * keeps or loses 512-byte sectors whole, so no torn write looks like
 * that; a recovery that takes it for a torn tail cuts records that were
 * on disk.  The sites are sectors newest first (the tail, where a reader
 * decides between torn and damaged, and where the witnesses of W3b are
 * fewest), then older ones drawn, each with one record byte and one bit.
 * Reads the segment; writes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "faults.h"
#include "format.h"
#include "walview.h"

/* Bytes of records in [A, B) of V. */
static uint64_t record_bytes(const flt_wal_view *v, uint64_t a, uint64_t b) {
    return flt_wal_view_count(v, a, b, FLT_WR_RECORD_HEADER) + flt_wal_view_count(v, a, b, FLT_WR_RECORD_PAYLOAD);
}

/* A site in the record bytes of [A, B) of V, drawn from *R. */
static flt_sweep_site site_in(const flt_wal_view *v, uint64_t a, uint64_t b, uint64_t *r) {
    uint64_t h = flt_wal_view_count(v, a, b, FLT_WR_RECORD_HEADER);
    uint64_t n = h + flt_wal_view_count(v, a, b, FLT_WR_RECORD_PAYLOAD);
    *r = rng_mix64(*r);
    uint64_t k = *r % n;
    flt_sweep_site s;
    s.region = flt_wal_region_name(k < h ? FLT_WR_RECORD_HEADER : FLT_WR_RECORD_PAYLOAD);
    s.off = k < h ? flt_wal_view_nth(v, a, b, FLT_WR_RECORD_HEADER, k)
                  : flt_wal_view_nth(v, a, b, FLT_WR_RECORD_PAYLOAD, k - h);
    s.block = s.off / WAL_BLOCK;
    s.bit = (int)((*r >> 32) % 8);
    return s;
}

size_t flt_wal_sweep_sites(const char *db_dir, const char *rel, uint64_t lo, uint64_t hi, uint64_t seed,
                           flt_sweep_site *out, size_t cap) {
    flt_wal_view v;
    if (!cap || hi <= lo || !flt_wal_view_load(db_dir, rel, lo, hi - lo, &v)) return 0;
    if (hi > v.size) hi = v.size;
    uint64_t r = rng_mix64(seed ^ 0x7377656570000000ull), first = lo / WAL_SECTOR * WAL_SECTOR;
    size_t nsec = hi > first ? (size_t)((hi - first + WAL_SECTOR - 1) / WAL_SECTOR) : 0, n = 0, newest = cap - cap / 4;
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
