/*
 * checksum.c -- page checksums and the all-zero test (docs/engine.md, Pages
 * and checksums; layout in engine/format.h).
 *
 * The checksum is XXH3-64 over bytes [8, page_size) of the page: every byte
 * except the ph_checksum field itself, which is left out rather than copied
 * and zeroed.  Leaving it out is as strong as hashing it as zero (the field
 * is a constant either way) and needs no copy of the page.
 *
 *   seed = (file_id << PAGE_SEED_FILE_SHIFT) ^ block
 *
 * The seed binds the page to its place (P4): the same bytes written to
 * another block, or another paged file, hash differently, so a misdirected
 * write fails the checksum with 2^-64-class odds.  There is one paged file
 * today ("data", file id 0), so the seed is the block number; blocks are
 * u32 on disk, so the top byte is free for up to 256 paged files.
 *
 * The result is never 0: 0 in ph_checksum means "not set" (checksums off).
 * A hash that comes out 0 is stored as 1; the odds of a miss stay 2^-64-class.
 *
 * Speed: this runs on every page read and write.  Debian's libxxhash ships
 * runtime CPU dispatch (AVX2/AVX-512): measured ~100 ns per 4 KiB page
 * (~40 GB/s) against ~225 ns (~18 GB/s) for the SSE2 baseline, whether
 * inlined with XXH_INLINE_ALL or called from the library.  Inlining bought
 * nothing measurable; dispatch more than doubles throughput.  Every path
 * gives the same value: XXH3's output does not depend on the vector width.
 */
#include <stdint.h>
#include <string.h>

#include <xxhash.h>
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#define PAGE_XXH3_SEEDED XXH3_64bits_withSeed_dispatch
#endif
#endif
#ifndef PAGE_XXH3_SEEDED
#define PAGE_XXH3_SEEDED XXH3_64bits_withSeed
#endif

#include "page.h"

/* The data file's id in the seed (format.h: PAGE_SEED_FILE_SHIFT). */
#define SEED_FILE_DATA 0u

/* ph_checksum is bytes [0, 8): the hash covers everything after it. */
#define CHECKSUM_FIELD_END PAGE_CHECKSUM_FROM

static inline uint64_t page_seed(uint64_t file_id, uint64_t block) { return (file_id << PAGE_SEED_FILE_SHIFT) ^ block; }

uint64_t page_checksum(const uint8_t *page, size_t page_size, uint64_t block) {
#ifdef ENG_BROKEN_CHECKSUM_SKIPS_LAST_BYTE
    /* planted bug (tests/mutants.txt): the hashed length is off by one,
     * so the last byte of the page (the tail of the first cell put in a
     * leaf) is not covered and a flip there passes the checksum. */
    uint64_t h = PAGE_XXH3_SEEDED(page + CHECKSUM_FIELD_END, page_size - CHECKSUM_FIELD_END - 1,
                                  page_seed(SEED_FILE_DATA, block));
#else
    uint64_t h =
        PAGE_XXH3_SEEDED(page + CHECKSUM_FIELD_END, page_size - CHECKSUM_FIELD_END, page_seed(SEED_FILE_DATA, block));
#endif
    return h ? h : 1;
}

void page_set_checksum(uint8_t *page, size_t page_size, uint64_t block) {
    ph_set_checksum(page, page_checksum(page, page_size, block));
}

/* Comparing the page against itself shifted by one byte lets glibc's
 * vectorized memcmp do the scan: ~50 ns for a zero 4 KiB page, three times
 * faster than a word loop, and a written page differs within its first
 * bytes (checksum, block) so it returns at once. */
int page_is_zero(const uint8_t *page, size_t page_size) {
    if (page_size == 0) return 1;
    return page[0] == 0 && memcmp(page, page + 1, page_size - 1) == 0;
}
