/*
 * delay.c -- pauses that widen race windows (FoundationDB's BUGGIFY).
 *
 * A race between two threads shows only when one of them is caught
 * between two steps while the other acts, and a window of a few
 * instructions opens a few times a run: a uniform draw of operations
 * almost never lands in it.  With delay_one_in set, every delay
 * opportunity (the engine's delay/... points, and each side of an fsync,
 * a write and a read in the I/O hooks) pauses the thread with odds 1 in
 * N: a sleep of a length drawn log-uniform in [1, delay_max_us]
 * microseconds (short pauses are as common per decade as long ones, so
 * both tight and slow races are met), or, one time in four, a yield.
 * A kill that fires pauses first, always (site kill/late, while delays
 * are on and the site is not left out): the thread that dies is caught
 * between what it published and the I/O it was about to issue, while the
 * other threads act on what it published (a group's durable mark set
 * before its fsync, a hint taken from it, a page written back after it),
 * and the crash then lands on what they did.  A kill happens once a
 * process, so odds of 1 in delay_one_in would almost never pause it.
 * An I/O the library fails pauses first, always, too (site fault/slow):
 * a failing device is slow to say so (an EIO after a timeout), and a
 * failure's handling is where races hide: a reader waiting on a load
 * that fails, a commit behind a failed fsync, a page whose write-back
 * failed.  Failures are rare, so 1 in delay_one_in would almost never
 * widen those windows either.
 * delay_sites narrows the opportunities to the sites it names, as
 * BUGGIFY enables a quarter of its points per simulation run: a race
 * needs its own site to pause often, and pauses spread over every site
 * dilute it.
 *
 * A pause is never a fault: it changes no byte and no result, so it
 * explains nothing.  Its ledger line (class "delay") is for the reader
 * of a failure and for replay; the oracle skips such lines.  Draws come
 * from the thread's delay stream (FLT_STREAM_DELAY), so one seed and one
 * thread give the same pauses at the same opportunities, and an op
 * trace's per-op reseed carries them with their op.
 */
#include <math.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "delay_int.h"

/* One time in YIELD_ONE_IN a pause is a yield, not a sleep. */
#define YIELD_ONE_IN 4

/* The hooks' sites, [kind][after]: read, write and fsync, each side. */
static const char *const hook_sites[3][2] = {
    {"hook/read/before", "hook/read/after"},
    {"hook/write/before", "hook/write/after"},
    {"hook/sync/before", "hook/sync/after"},
};

const char *flt_delay_hook_site(int kind, int after) {
    int k = kind == ENG_IO_READ ? 0 : kind == ENG_IO_WRITE ? 1 : kind == ENG_IO_SYNC ? 2 : -1;
    return k < 0 ? NULL : hook_sites[k][after != 0];
}

static int is_site(const char *name, size_t n) {
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 2; a++)
            if (strlen(hook_sites[k][a]) == n && !memcmp(hook_sites[k][a], name, n)) return 1;
    if (strlen(FLT_DELAY_KILL_SITE) == n && !memcmp(FLT_DELAY_KILL_SITE, name, n)) return 1;
    if (strlen(FLT_DELAY_FAULT_SITE) == n && !memcmp(FLT_DELAY_FAULT_SITE, name, n)) return 1;
    for (size_t i = 0; i < eng_fault_point_count(); i++) {
        const char *p = eng_fault_point_name(i);
        if (!strncmp(p, "delay/", 6) && strlen(p) == n && !memcmp(p, name, n)) return 1;
    }
    return 0;
}

const char *flt_delay_sites_invalid(const char *list) { return flt_list_invalid(list, is_site); }

/* Log-uniform in [1, max]: 2^(u * log2 max) with u uniform in [0, 1). */
static uint64_t draw_us(flt_ctx *f, flt_thr *t, uint64_t max) {
    if (max <= 1) return 1;
    double u = (double)flt_below(f, t, FLT_STREAM_DELAY, 1u << 20) / (double)(1u << 20);
    uint64_t us = (uint64_t)exp2(u * log2((double)max));
    return us < 1 ? 1 : us > max ? max : us;
}

/* A pause at WHERE with odds 1 in N (1: always) while delays are on. */
static int pause_at(flt_ctx *f, flt_thr *t, const char *where, uint64_t n) {
    if (!f->o.delay_one_in || flt_paused(f)) return 0;
    /* A site left out of delay_sites is no opportunity: nothing drawn. */
    if (f->o.delay_sites && !flt_list_has(f->o.delay_sites, where)) return 0;
    if (n > 1 && flt_below(f, t, FLT_STREAM_DELAY, n) != 0) return 0;
    /* Both draws happen whatever is chosen, so the stream moves alike. */
    int yield = flt_below(f, t, FLT_STREAM_DELAY, YIELD_ONE_IN) == 0;
    uint64_t us = draw_us(f, t, f->o.delay_max_us ? f->o.delay_max_us : FLT_DELAY_MAX_US_DEFAULT);
    if (yield) us = 0;
    flt_event e = flt_event_none("delay", where);
    e.phase = f->o.phase_recovery ? "recovery" : NULL;
    if (t) {
        e.op = atomic_load_explicit(&t->op, memory_order_relaxed);
        e.thread = t->thread;
    }
    e.len = (int64_t)us;
    if (flt_ledger_append_seq(f->ledger, &e, NULL) != 0) return 0;
    atomic_fetch_add_explicit(&f->delays, 1, memory_order_relaxed);
    if (yield) {
        sched_yield();
    } else {
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0) {}
    }
    return 1;
}

int flt_delay(flt_ctx *f, flt_thr *t, const char *where) { return pause_at(f, t, where, f->o.delay_one_in); }

int flt_delay_kill(flt_ctx *f, flt_thr *t) { return pause_at(f, t, FLT_DELAY_KILL_SITE, 1); }

int flt_delay_fault(flt_ctx *f, flt_thr *t) { return pause_at(f, t, FLT_DELAY_FAULT_SITE, 1); }
