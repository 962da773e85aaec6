/*
 * scan_history.h -- whether a scan saw one point of history, from what
 * the driver knows of each key's writes during it: a pure function,
 * which check.c turns into a verdict.
 *
 * A scan without a snapshot of its own sees the commits up to some
 * sequence (adapter.h, iter_open: the rule snapshots follow too).  The driver
 * cannot name that sequence, but it can test that one exists: a key that
 * exactly one settled write changed during the scan shows the write
 * (seen) or not (missed), and every write seen must have a lower
 * sequence than every write missed.  A batch's keys share one sequence:
 * half of a batch seen breaks it too.
 *
 * A key constrains nothing when its stripe saw more or fewer than one
 * write in the scan's window (stripes share a counter: which write of
 * several is unknown), when a write to it is still in flight at the end
 * (its sequence is not known yet), or when the scan returned neither its
 * old nor its new value (the per-key check judges that).
 */
#ifndef STRESS_SCAN_HISTORY_H
#define STRESS_SCAN_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "oracle/expected.h"

/* One key of a scan. */
typedef struct st_scan_key {
    uint64_t key;
    uint32_t seen;   /* the value seed the scan returned (0: absent) */
    orc_entry a, b;  /* the expected state before and after the scan */
    uint64_t writes; /* writes settled in the key's stripe during the scan */
    uint64_t seq;    /* with writes == 1: that write's commit sequence */
} st_scan_key;

/* 1 if no point of history explains the N keys of K, with *NEWEST the
 * key whose write of the highest sequence the scan saw and *OLDEST the
 * key whose write of the lowest sequence it missed (that one is not
 * higher); else 0. */
int st_scan_history_broken(const st_scan_key *k, size_t n, size_t *newest, size_t *oldest);

#endif
