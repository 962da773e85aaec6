/*
 * doorio_int.h -- what doorio.c (the I/O error classes at the door's
 * calls, for an engine with no fault points of its own) offers faults.c
 * above it (frame.h draws the order).  Nothing outside faults/ includes
 * it.
 */
#ifndef FAULTS_DOORIO_INT_H
#define FAULTS_DOORIO_INT_H

#include "frame.h"

/* Through the door to another engine (via_door with a file_kind) with
 * read_error, write_error, nospace, short_io or sync_error on:
 * f->hooks.before draws the first four and marks files of no kind (or
 * of no kind fault_files names) off for every I/O class, then calls the
 * before() it replaced (kill.c's or inject.c's). */
void flt_door_io_hooks(flt_ctx *f);

#endif
