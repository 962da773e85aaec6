/*
 * inject_int.h -- what inject.c (the I/O hooks and flt_tick) offers the
 * files above it in the fault library: fiu.c and faults.c (faults_int.h
 * draws the order).  Nothing outside faults/ includes it.
 */
#ifndef FAULTS_INJECT_INT_H
#define FAULTS_INJECT_INT_H

#include "faults_int.h"

/* Fill F->hooks (flt_open, before anything can call them). */
void flt_hooks_init(flt_ctx *f);
const char *flt_rel_path(flt_ctx *f, const char *path); /* for the ledger's file field */
void flt_thr_free_bufs(flt_thr *t);

/* Every kill, with bitflip_wal on, flips a bit in the last
 * sector of the last WAL write first (the end of the last record): damage
 * to the log's end that nothing written later
 * can reveal, which recovery must report when the record was synced and
 * may trim when it was not (DESIGN 5: "also when nothing was written
 * after it"; engine/wal.h W3).  Called by fiu.c's kill points. */
void flt_flip_wal_at_crash(flt_ctx *f, flt_thr *t);

#endif
