/*
 * fiu.c -- the engine's libfiu points (engine/faultpoints.h), driven by
 * the run's seed.
 *
 * Each point a class needs is enabled by its exact name with one external
 * callback whose failinfo is the point's flt_point, because libfiu tells
 * the callback the enabled name, not the point that fired:
 *
 *   class                  point                      failnum
 *   read_error             engine/io/read             EIO
 *   write_error, nospace   engine/io/write            EIO or ENOSPC, set per firing
 *                          engine/wal/append          (the engine poisons the log
 *                                                     as a failed write of it would)
 *   write_error            engine/io/meta             EIO (create, rename, unlink,
 *                                                     truncate, directory fsync)
 *                          engine/checkpoint/control  EIO (before control is written)
 *   read_error or          engine/io/uring/submit     EIO, by the kind of the calling
 *   write_error            engine/io/uring/complete   thread's last read or write
 *                                                     (io_kind, set by before(); only
 *                                                     io_backend=uring reaches them)
 *   sync_error             engine/io/fsync            EIO: fires when before(SYNC)
 *                                                     drew a sync_error and gave it
 *                                                     to this point (half of them,
 *                                                     inject.c); after(SYNC) then
 *                                                     drops dirty data as for hook/sync
 *   short_io               engine/io/short            (any: the engine halves one
 *                                                     transfer and finishes the rest)
 *   (delay_one_in,         delay/...                  (none: the callback may
 *    no class)                                         pause, delay.c, and returns 0)
 *   kill                   kill/... (all,             the callback never returns:
 *                          or kill_points)            ledger line, then SIGKILL
 *                                                     (drawn, or pinned by flt_kill_at:
 *                                                     with kill_pins, all of them)
 *
 * libfiu calls the callback every time an enabled point is reached (with
 * the engine armed), so the callback counts checks there, draws from the
 * calling thread's stream of the class, and on a firing writes the ledger
 * line first (FL1), counts the hit, and only then lets the fault happen.
 * libfiu's own random generator is never used.
 *
 * Limitation: libfiu keeps one failnum per enabled point and reads it
 * after the callback returns, so when two threads fire engine/io/write at
 * the same instant, one with EIO and one with ENOSPC, one of them may be
 * handed the other's errno (the ledger then names the wrong one).  With
 * one thread, or with only one of the two classes on, it is exact.
 */
#include <errno.h>
#ifdef FLT_DEBUG_BT
#include <execinfo.h>
#include <stdlib.h>
#endif
#include <string.h>
#include <unistd.h>

#include <fiu-control.h>
#include <fiu.h>

#include "delay_int.h"
#include "frame.h"
#include "fiu_int.h"
#include "inject_int.h"
#include "kill_int.h"

int flt_fiu_wanted(const flt_options *o) {
    /* sync_error works through the hooks alone in the plain build; with
     * the points compiled in, half of it goes through engine/io/fsync. */
    return o->one_in[FLT_READ_ERROR] || o->one_in[FLT_WRITE_ERROR] || o->one_in[FLT_NOSPACE] ||
           o->one_in[FLT_SHORT_IO] || o->kill_random_test || o->one_in[FLT_KILL] || o->kill_pins ||
           ((o->one_in[FLT_SYNC_ERROR] || o->delay_one_in) && eng_faults_compiled());
}

static int is_kill_point(const char *name) { return strncmp(name, "kill/", 5) == 0; }
static int is_delay_point(const char *name) { return strncmp(name, "delay/", 6) == 0; }

int flt_kill_points_valid(const char *list) {
    /* Every name must be a kill point of the catalogue, and there must be
     * at least one. */
    int names = 0;
    for (const char *s = list; *s;) {
        while (*s == ' ' || *s == ',') s++;
        if (!*s) break;
        const char *e = s;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > s && t[-1] == ' ') t--;
        int known = 0;
        for (size_t i = 0; i < eng_fault_point_count() && !known; i++) {
            const char *nm = eng_fault_point_name(i);
            known = is_kill_point(nm) && strlen(nm) == (size_t)(t - s) && memcmp(nm, s, (size_t)(t - s)) == 0;
        }
        known = known || flt_is_door_kill_point(s, (size_t)(t - s));
        if (!known) return 0;
        names++;
        s = e;
    }
    return names > 0;
}

/* libfiu's external callback (external_cb_t). */
static int fiu_cb(const char *name, int *failnum, void **failinfo, unsigned int *flags) {
    (void)name;
    (void)flags;
    flt_point *p = *failinfo;
    flt_ctx *f = p->f;
    atomic_fetch_add_explicit(&f->point_checks[p->idx], 1, memory_order_relaxed);
    if (flt_paused(f)) return 0;
    flt_thr *t = flt_thr_get(f);
    int cls = -1, err = 0;
    if (p->kind == FLT_PK_DELAY) {
        /* A pause, never a failure: its line is delay.c's. */
        if (flt_delay(f, t, p->name)) atomic_fetch_add_explicit(&f->point_hits[p->idx], 1, memory_order_relaxed);
        return 0;
    }
    /* fault_files.  The engine's read, write and meta points fire before
     * the hooks see the I/O they fail (engine/io.c), so their draw is
     * made here as always and handed to before(), which knows the file
     * and fails the I/O if its kind is one of fault_files (inject.c).
     * Two points outside any I/O name their kind themselves.  The
     * thread's state comes back after the draw. */
    int off0 = t ? t->file_off : 0;
    const char *kind = !strcmp(p->name, "engine/wal/append")           ? "wal"
                       : !strcmp(p->name, "engine/checkpoint/control") ? "control"
                                                                       : NULL;
    int defer = t && f->o.fault_files && !kind && !strncmp(p->name, "engine/io/", 10) &&
                (p->kind == FLT_PK_READ || p->kind == FLT_PK_WRITE || p->kind == FLT_PK_EIO);
    if (t && f->o.fault_files) t->file_off = kind ? !flt_list_has(f->o.fault_files, kind) : defer ? 0 : off0;
    switch (p->kind) {
    case FLT_PK_READ:
        if (flt_draw(f, t, FLT_READ_ERROR)) cls = FLT_READ_ERROR, err = EIO;
        break;
    case FLT_PK_WRITE: {
        /* Both streams draw at every write, so each class fires at the
         * same writes whether or not the other is on. */
        int eio = flt_draw(f, t, FLT_WRITE_ERROR);
        int enospc = flt_draw(f, t, FLT_NOSPACE);
        if (eio)
            cls = FLT_WRITE_ERROR, err = EIO;
        else if (enospc)
            cls = FLT_NOSPACE, err = ENOSPC;
        break;
    }
    case FLT_PK_EIO:
        if (flt_draw(f, t, FLT_WRITE_ERROR)) cls = FLT_WRITE_ERROR, err = EIO;
        break;
    case FLT_PK_SHORT:
        if (flt_draw(f, t, FLT_SHORT_IO)) cls = FLT_SHORT_IO;
        break;
    case FLT_PK_FSYNC:
        /* Drawn already, by before(SYNC) on this thread (inject.c). */
        if (t && t->sync_fiu) {
            t->sync_fiu = 0;
            cls = FLT_SYNC_ERROR, err = EIO;
        }
        break;
    case FLT_PK_URING:
        if (t && t->io_kind == 1 + ENG_IO_READ && flt_draw(f, t, FLT_READ_ERROR))
            cls = FLT_READ_ERROR, err = EIO;
        else if (t && t->io_kind == 1 + ENG_IO_WRITE && flt_draw(f, t, FLT_WRITE_ERROR))
            cls = FLT_WRITE_ERROR, err = EIO;
        break;
    case FLT_PK_KILL:
        if (flt_kill_arrival(f, t, p->idx)) cls = FLT_KILL;
        break;
    default: break;
    }
    if (t) t->file_off = off0;
    if (cls < 0) return 0;
    if (defer) {
        t->deferred = 1 + cls;
        t->deferred_err = err;
        t->deferred_idx = p->idx;
        t->deferred_point = p->name;
        return 0;
    }
    flt_event e = flt_event_for(f, t, cls, p->name);
    if (err) e.err = err == ENOSPC ? "ENOSPC" : "EIO";
    if (cls == FLT_SYNC_ERROR) e.file = flt_rel_path(f, t->sync_path); /* as hook/sync's line */
    if (flt_record(f, cls, &e) != 0) return 0;                         /* FL1: no line, no fault */
#ifdef FLT_DEBUG_BT
    if (cls == FLT_READ_ERROR && getenv("FLT_BT")) {
        void *bt[32];
        fprintf(stderr, "BT read_error op %lld:%lld\n", (long long)(e.op >> 32), (long long)(e.op & 0xffffffff));
        backtrace_symbols_fd(bt, backtrace(bt, 32), 2);
    }
#endif
    atomic_fetch_add_explicit(&f->point_hits[p->idx], 1, memory_order_relaxed);
    if (cls == FLT_KILL) flt_kill_fire(f, t, p->name, t ? t->kill_n[p->idx] : 1);
    if (cls == FLT_SYNC_ERROR) t->sync_fiu_fired = 1; /* after(SYNC) drops the file's dirty data */
    if (err) {
        flt_delay_fault(f, t); /* a failing device is slow to say so */
        *failnum = err;
    }
    return 1;
}

int flt_fiu_setup(flt_ctx *f) {
    const flt_options *o = &f->o;
    if (!flt_fiu_wanted(o)) return ENG_OK;
    if (fiu_init(0) != 0) return ENG_NOMEM;
    size_t n = eng_fault_point_count();
    if (n > FLT_MAX_POINTS) n = FLT_MAX_POINTS;
    f->npoints = n;
    int got_read = 0, got_write = 0, got_short = 0, got_kill = 0;
    int rd = o->one_in[FLT_READ_ERROR] != 0, wr = o->one_in[FLT_WRITE_ERROR] != 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = eng_fault_point_name(i);
        int kind = FLT_PK_NONE;
        if (!strcmp(name, "engine/io/read") && rd)
            kind = FLT_PK_READ, got_read = 1;
        else if (!strcmp(name, "engine/io/write") && (wr || o->one_in[FLT_NOSPACE]))
            kind = FLT_PK_WRITE, got_write = 1;
        else if (!strcmp(name, "engine/wal/append") && (wr || o->one_in[FLT_NOSPACE]))
            kind = FLT_PK_WRITE;
        else if ((!strcmp(name, "engine/io/meta") || !strcmp(name, "engine/checkpoint/control")) && wr)
            kind = FLT_PK_EIO;
        else if ((!strcmp(name, "engine/io/uring/submit") || !strcmp(name, "engine/io/uring/complete")) && (rd || wr))
            kind = FLT_PK_URING;
        else if (!strcmp(name, "engine/io/fsync") && o->one_in[FLT_SYNC_ERROR] && !o->via_door)
            kind = FLT_PK_FSYNC, f->fsync_point = 1;
        else if (!strcmp(name, "engine/io/short") && o->one_in[FLT_SHORT_IO])
            kind = FLT_PK_SHORT, got_short = 1;
        else if (is_kill_point(name) &&
                 (o->kill_pins || (o->kill_random_test && (!o->kill_points || flt_list_has(o->kill_points, name)))))
            kind = FLT_PK_KILL, got_kill = 1;
        else if (is_delay_point(name) && o->delay_one_in)
            kind = FLT_PK_DELAY;
        if (kind == FLT_PK_NONE) continue;
        flt_point *p = &f->points[i];
        *p = (flt_point){.f = f, .idx = (int)i, .kind = kind, .name = name};
        if (fiu_enable_external(name, EIO, p, 0, fiu_cb) != 0)
            return ENG_NOMEM; /* flt_close disables what was enabled */
        p->enabled = 1;
    }
    got_kill |= flt_door_kills_setup(f) > 0;
    /* A class whose point the catalogue lacks cannot be injected: say so
     * rather than run a test that silently tests nothing. */
    if ((o->one_in[FLT_READ_ERROR] && !got_read) ||
        ((o->one_in[FLT_WRITE_ERROR] || o->one_in[FLT_NOSPACE]) && !got_write) ||
        (o->one_in[FLT_SHORT_IO] && !got_short) || (o->kill_random_test && !got_kill))
        return ENG_NOTSUP;
    eng_faults_arm(!flt_paused(f));
    f->armed = 1;
    return ENG_OK;
}

int flt_kill_at(flt_ctx *f, const char *point, uint64_t nth) {
    if (!f || !point || !nth) return ENG_INVALID; /* a name is valid when it names an enabled point, below */
    flt_thr *t = flt_thr_get(f);
    if (!t) return ENG_NOMEM;
    for (size_t i = 0; i < f->npoints; i++) {
        if (f->points[i].enabled && f->points[i].kind == FLT_PK_KILL && !strcmp(f->points[i].name, point)) {
            t->kill_pin = 1 + (int)i;
            t->kill_pin_nth = nth;
            t->kill_pin_op = atomic_load_explicit(&t->op, memory_order_relaxed);
            return ENG_OK;
        }
    }
    return ENG_INVALID; /* no kill point of that name is enabled (kill_pins or kill_random_test) */
}

int flt_point_index(const flt_ctx *f, const char *name) {
    for (size_t i = 0; f && i < f->npoints; i++)
        if (f->points[i].enabled && !strcmp(f->points[i].name, name)) return (int)i;
    return -1;
}

void flt_fiu_teardown(flt_ctx *f) {
    for (size_t i = 0; i < f->npoints; i++) {
        if (f->points[i].enabled) {
            if (!f->points[i].door) fiu_disable(f->points[i].name);
            f->points[i].enabled = 0;
        }
    }
}
