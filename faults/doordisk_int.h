/*
 * doordisk_int.h -- what doordisk.c (bitflip_page and zero_page on disk
 * for an engine reached through the door) offers inject.c's flt_tick and
 * kill.c's crash above it (frame.h draws the order).  Nothing outside
 * faults/ includes it.
 */
#ifndef FAULTS_DOORDISK_INT_H
#define FAULTS_DOORDISK_INT_H

#include "frame.h"

/* The unit the door places another engine's damage by (ledger block):
 * doordisk.c's blocks on disk, doorio.c's in-flight flips. */
#define FLT_DOOR_BLOCK 4096u

/* 1 if the damage on disk is another engine's (via_door with a
 * file_kind: RocksDB, SQLite): doordisk.c makes it instead of inject.c,
 * whose flips are placed by our engine's page format. */
int flt_door_disk(const flt_ctx *f);

/* Between operations (flt_tick, inside flt_door_bypass): with bitflip_page
 * drawn, one bit of one 4 KiB block of a database file flipped; with
 * zero_page drawn, one such block zeroed (point tick/door). */
void flt_door_disk_tick(flt_ctx *f, flt_thr *t);

/* Right before a kill's SIGKILL (inside flt_door_bypass): one block's bit
 * flipped when bitflip_page is on, one block zeroed at half the kills
 * when zero_page is on (point crash/door). */
void flt_door_disk_at_crash(flt_ctx *f, flt_thr *t);

#endif
