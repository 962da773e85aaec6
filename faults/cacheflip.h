/*
 * cacheflip.h -- bitflip_cache with flip patterns (cacheflip.c): what it
 * offers inject.c's flt_tick.  Nothing outside faults/ includes it.
 */
#ifndef FAULTS_CACHEFLIP_H
#define FAULTS_CACHEFLIP_H

#include "frame.h"

/* One firing of bitflip_cache with --bitflip_cache_patterns: a pattern
 * and a region drawn, the bits flipped in a resident slotted page, the
 * engine's whole-page check run, the bits flipped back, and one ledger
 * line with the outcome.  Nothing when no such page is resident. */
void flt_cache_pattern(flt_ctx *f, flt_thr *t, eng_db *db);

/* One firing of bitflip_cache at a tick: one bit of a resident frame (a
 * quarter of the flips in the header, the rest over the bytes the page
 * uses), under its exclusive latch, with its ledger line (part, pair_of,
 * pair_check) and D7's note; a pattern instead with cache_patterns.
 * Nothing when no block tried is resident. */
void flt_tick_cache(flt_ctx *f, flt_thr *t, eng_db *db);

#endif
