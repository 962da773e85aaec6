/*
 * kill_int.h -- what kill.c (kill points: their arrival, their firing, and
 * the door's own kill points) offers fiu.c and faults.c above it (frame.h
 * draws the order).  Nothing outside faults/ includes it.
 */
#ifndef FAULTS_KILL_INT_H
#define FAULTS_KILL_INT_H

#include <stddef.h>

#include "frame.h"

/* A kill point's arrival on thread T (NULL: none could be made) at
 * f->points[IDX]: counted for T's current op (before_kill's NTH), and
 * whether it fires: the pinned arrival of flt_kill_at, else a draw of the
 * kill stream.  Returns 1 to fire. */
int flt_kill_arrival(flt_ctx *f, flt_thr *t, int idx);

/* After kill point POINT's ledger line: the flips at the crash (outside
 * the door), before_kill with NTH, SIGKILL.  Never returns. */
_Noreturn void flt_kill_fire(flt_ctx *f, flt_thr *t, const char *point, uint64_t nth);

/* 1 if NAME (N bytes) is one of the door's kill points. */
int flt_is_door_kill_point(const char *name, size_t n);

/* Register the door's kill points the options enable (via_door, and
 * kill_random_test limited by kill_points, or kill_pins) after the
 * engine's points in f->points.  Returns how many. */
int flt_door_kills_setup(flt_ctx *f);

/* With door kill points enabled, f->hooks.before draws them first. */
void flt_kill_hooks(flt_ctx *f);

#endif
