/*
 * kill.c -- kill points: an arrival counted and drawn (or pinned), a
 * firing (ledger line first, then the flips at the crash, before_kill,
 * SIGKILL), and the door's own kill points for an engine that has none.
 *
 * The engine's kill points are libfiu points (fiu.c's callback calls
 * flt_kill_arrival and flt_kill_fire).  An engine reached through the
 * door (RocksDB, SQLite) has no such points, so the door's calls are
 * kill points themselves: before a write or fsync of a file of each kind
 * (faults.h's o.file_kind tells them apart by name), before an fsync of a
 * directory, and before a create, rename, unlink or truncate.  They sit
 * in f->points after the engine's, with no libfiu point behind them:
 * before() draws them (flt_kill_hooks puts it in front of inject.c's),
 * so counting, pinning (flt_kill_at) and the ledger line are the engine
 * points' own.  A firing damages the files first as every kill does:
 * another engine's by kind and block (doordisk.c), ours by its format.
 * The kill comes before the call is issued: the call's effect is what
 * the next kill point's "after" would show.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "delay_int.h"
#include "door.h"
#include "doordisk_int.h"
#include "frame.h"
#include "inject_int.h"
#include "kill_int.h"

/* The damage at the crash: our engine's pages, log and control file by
 * their format (inject.c), another engine's files by kind and block
 * (doordisk.c). */
static void damage_at_crash(flt_ctx *f, flt_thr *t) {
    if (flt_door_disk(f))
        flt_door_disk_at_crash(f, t);
    else
        flt_flip_at_crash(f, t);
}

_Noreturn void flt_crash_now(flt_ctx *f) {
    flt_thr *t = flt_thr_get(f); /* thread -1 unless the caller started one */
    flt_door_bypass(1);          /* as flt_kill_fire: the flips are not the engine's writes */
    damage_at_crash(f, t);
    raise(SIGKILL);
    for (;;) pause();
}

/* The catalogue, and what each point's call is. */
static const struct {
    const char *name, *what;
    int kind;         /* ENG_IO_* */
    const char *file; /* file kind, NULL: any file */
} door_points[] = {
    {"kill/door/write/data", "before a write of a data file (the door)", ENG_IO_WRITE, "data"},
    {"kill/door/write/wal", "before a write of a log file (the door)", ENG_IO_WRITE, "wal"},
    {"kill/door/write/control", "before a write of a manifest or control file (the door)", ENG_IO_WRITE, "control"},
    {"kill/door/sync/data", "before an fsync of a data file (the door)", ENG_IO_SYNC, "data"},
    {"kill/door/sync/wal", "before an fsync of a log file (the door)", ENG_IO_SYNC, "wal"},
    {"kill/door/sync/control", "before an fsync of a manifest or control file (the door)", ENG_IO_SYNC, "control"},
    {"kill/door/sync/dir", "before an fsync of the database directory (the door)", ENG_IO_DIRSYNC, "dir"},
    {"kill/door/create", "before a file of the database is created (the door)", ENG_IO_CREATE, NULL},
    {"kill/door/rename", "before a rename in the database directory (the door)", ENG_IO_RENAME, NULL},
    {"kill/door/unlink", "before an unlink in the database directory (the door)", ENG_IO_UNLINK, NULL},
    {"kill/door/truncate", "before a file of the database is truncated or grown (the door)", ENG_IO_TRUNCATE, NULL},
};
#define NDOOR (sizeof door_points / sizeof *door_points)

size_t flt_door_kill_point_count(void) { return NDOOR; }
const char *flt_door_kill_point_name(size_t i) { return i < NDOOR ? door_points[i].name : NULL; }
const char *flt_door_kill_point_what(size_t i) { return i < NDOOR ? door_points[i].what : NULL; }
const char *flt_door_kill_point_kind(size_t i) { return i < NDOOR ? door_points[i].file : NULL; }
_Static_assert(NDOOR <= sizeof((flt_ctx *)0)->door_kill / sizeof(int), "frame.h's door_kill holds every door point");

int flt_is_door_kill_point(const char *name, size_t n) {
    for (size_t i = 0; i < NDOOR; i++)
        if (strlen(door_points[i].name) == n && !memcmp(door_points[i].name, name, n)) return 1;
    return 0;
}

/* Whether the arrival at kill point IDX kills; one that does first lets
 * the other threads run on for a drawn pause (delay.c, kill/late). */
int flt_kill_arrival(flt_ctx *f, flt_thr *t, int idx) {
    int fire;
    if (!t) {
        fire = flt_draw(f, t, FLT_KILL);
    } else {
        /* Count the arrivals of this op (before_kill's NTH); a pinned
         * kill fires at its NTH and is never drawn. */
        int64_t op = atomic_load_explicit(&t->op, memory_order_relaxed);
        if (t->kill_op[idx] != op) t->kill_op[idx] = op, t->kill_n[idx] = 0;
        t->kill_n[idx]++;
        if (t->kill_pin == 1 + idx && t->kill_pin_op == op)
            fire = t->kill_n[idx] == t->kill_pin_nth;
        else
            fire = flt_draw(f, t, FLT_KILL);
    }
    if (fire) flt_delay_kill(f, t);
    return fire;
}

_Noreturn void flt_kill_fire(flt_ctx *f, flt_thr *t, const char *point, uint64_t nth) {
    /* The ledger line is in the page cache (one write(2) returned): it
     * survives the kill.  Through the door, the flips' own pwrite would
     * be taken for the engine's: hooked, and journaled as a write power
     * loss may undo. */
    flt_door_bypass(1);
    damage_at_crash(f, t);
    flt_door_bypass(0);
    if (f->o.before_kill) f->o.before_kill(point, nth);
    raise(SIGKILL);
    for (;;) pause(); /* not reached: SIGKILL cannot be caught */
}

int flt_door_kills_setup(flt_ctx *f) {
    const flt_options *o = &f->o;
    int n = 0;
    for (size_t i = 0; i < NDOOR; i++) {
        f->door_kill[i] = -1;
        int on = o->kill_pins ||
                 (o->kill_random_test && (!o->kill_points || flt_list_has(o->kill_points, door_points[i].name)));
        if (!o->via_door || !on || f->npoints >= FLT_MAX_POINTS) continue;
        int idx = (int)f->npoints++;
        f->points[idx] =
            (flt_point){.f = f, .idx = idx, .kind = FLT_PK_KILL, .name = door_points[i].name, .enabled = 1, .door = 1};
        f->door_kill[i] = idx;
        n++;
    }
    f->door_kills = n > 0;
    return n;
}

/* The enabled door point OP reaches, or -1. */
static int door_point_of(flt_ctx *f, const eng_io_op *op) {
    const char *kind = NULL;
    if (op->kind == ENG_IO_WRITE || op->kind == ENG_IO_SYNC || op->kind == ENG_IO_DIRSYNC) {
        kind = flt_file_kind(f, op);
        if (!kind) return -1; /* a file of no kind (an info log, a lock file) */
    }
    for (size_t i = 0; i < NDOOR; i++)
        if (door_points[i].kind == (int)op->kind &&
            (!door_points[i].file || (kind && !strcmp(kind, door_points[i].file))))
            return f->door_kill[i];
    return -1;
}

static int kill_before(void *ctx, eng_io_op *op) {
    flt_ctx *f = ctx;
    int idx = flt_paused(f) ? -1 : door_point_of(f, op);
    if (idx >= 0) {
        flt_thr *t = flt_thr_get(f);
        atomic_fetch_add_explicit(&f->point_checks[idx], 1, memory_order_relaxed);
        if (flt_kill_arrival(f, t, idx)) {
            flt_event e = flt_event_for(f, t, FLT_KILL, f->points[idx].name);
            e.file = flt_rel_path(f, op->path);
            if (flt_record(f, FLT_KILL, &e) == 0) { /* FL1: no line, no fault */
                atomic_fetch_add_explicit(&f->point_hits[idx], 1, memory_order_relaxed);
                flt_kill_fire(f, t, f->points[idx].name, t ? t->kill_n[idx] : 1);
            }
        }
    }
    return flt_hook_before(ctx, op);
}

void flt_kill_hooks(flt_ctx *f) {
    if (f->door_kills) f->hooks.before = kill_before;
}
