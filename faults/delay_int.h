/*
 * delay_int.h -- what delay.c offers fiu.c and inject.c: the pauses that
 * widen race windows (faults.h, delay_one_in).
 */
#ifndef FAULTS_DELAY_INT_H
#define FAULTS_DELAY_INT_H

#include "frame.h"

/* One delay opportunity at WHERE (an engine delay/... point, or an I/O
 * hook's side of an operation, "hook/sync/before" ...) on the calling
 * thread T (may be NULL): with odds 1 in delay_one_in, a ledger line
 * (class "delay", point WHERE, len the pause in microseconds, 0 for a
 * yield) and then the pause.  Nothing, and no draw, while paused or with
 * delays off.  Returns 1 when it paused. */
int flt_delay(flt_ctx *f, flt_thr *t, const char *where);

/* The pause of a kill that fires (kill.c, before its ledger line): a
 * delay at FLT_DELAY_KILL_SITE, made every time (not 1 in delay_one_in)
 * while delays are on and delay_sites does not leave the site out.
 * Returns 1 when it paused. */
#define FLT_DELAY_KILL_SITE "kill/late"
int flt_delay_kill(flt_ctx *f, flt_thr *t);

/* The pause of an I/O the library fails (an error class's ledger line
 * written, the failure about to reach the engine): a delay at
 * FLT_DELAY_FAULT_SITE, made every time while delays are on and
 * delay_sites does not leave the site out.  Returns 1 when it paused. */
#define FLT_DELAY_FAULT_SITE "fault/slow"
int flt_delay_fault(flt_ctx *f, flt_thr *t);

/* The delay site on one side (AFTER 0 or 1) of an I/O operation of KIND
 * (enum eng_io_kind) in the hooks: "hook/read/before" ... "hook/sync/after",
 * or NULL for a kind that has none (metadata operations). */
const char *flt_delay_hook_site(int kind, int after);

#endif
