/*
 * inject_int.h -- what inject.c (the I/O hooks and flt_tick) offers the
 * files above it in the fault library: fiu.c and faults.c (frame.h
 * draws the order).  Nothing outside faults/ includes it.
 */
#ifndef FAULTS_INJECT_INT_H
#define FAULTS_INJECT_INT_H

#include "frame.h"

/* Fill F->hooks (flt_open, before anything can call them). */
void flt_hooks_init(flt_ctx *f);
const char *flt_rel_path(flt_ctx *f, const char *path); /* for the ledger's file field */

/* At every kill, before the SIGKILL (fiu.c's kill points).  With
 * bitflip_wal on, a bit inside a record of the last synced group's last
 * write or of the unsynced tail flips (half the time in that write's last
 * record; or a synced sector zeroed, flt_wal_zero_at_crash): damage nothing written later can cover, which recovery must
 * report when the record was synced and may trim when it was not
 * (engine/wal.h W3).  With bitflip_page on, a bit of a data page flips,
 * placed by the page's format as a tick's is; with zero_page on, half the
 * kills zero a block drawn by class (place.h: the durable boundary or a
 * page type).  Nothing of the process writes those bytes again. */
void flt_flip_at_crash(flt_ctx *f, flt_thr *t);

/* walzero.c: with bitflip_wal on, a sector of the last synced write (or
 * of the blocks just before it) whose record a synced later block
 * witnesses durable, zeroed on disk (region synced_sector, point
 * crash/wal).  1 if one was, 0 when no sector qualifies. */
int flt_wal_zero_at_crash(flt_ctx *f, flt_thr *t);

/* The I/O hooks' before(): kill.c's before() runs its door kill points,
 * then this. */
int flt_hook_before(void *ctx, eng_io_op *op);

/* OP's file kind ("data", "wal", "control" or "dir"; NULL for a file of
 * another engine that is none of them): fault_files' and the door kill
 * points' word for it. */
const char *flt_file_kind(flt_ctx *f, const eng_io_op *op);


#endif
