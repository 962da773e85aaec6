/*
 * faults.c -- the fault library's options, open and close, and pause: the
 * top of faults/ (frame.h draws the order).  The injectors live in
 * fiu.c (libfiu points) and inject.c (I/O hooks, flt_tick); the frame they
 * share (context, per-thread streams, counts) in frame.c.
 *
 * Context life:
 *
 *   flt_open --> [running] <--flt_pause(0)-- [paused] --> flt_close
 *                    |                          ^
 *                    +-------flt_pause(1)-------+
 *
 *   running  hooks and callbacks draw and inject; the engine's points are
 *            armed if any libfiu point was enabled
 *   paused   every injector answers "no fault" without drawing; the points
 *            stay enabled but the engine is disarmed (one relaxed load per
 *            point again); the journal keeps recording
 *
 * Invariants:
 *   FL1  an injection is in the ledger before it takes effect, and is
 *        counted exactly when its line was written (counts == ledger lines
 *        per class, for this process)
 *   FL2  a thread's decisions depend only on (seed, its index, its own
 *        sequence of opportunities)
 *   FL3  at most one context has libfiu points enabled at a time (libfiu's
 *        table is process-wide)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "damage_int.h"
#include "doorio_int.h"
#include "frame.h"
#include "fiu_int.h"
#include "inject_int.h"
#include "kill_int.h"

/* ---- options ---- */

void flt_options_init(flt_options *o) {
    memset(o, 0, sizeof *o);
    /* Every class off, seed 0, the ledger's "run" phase, all kill points
     * (when kill_random_test is set). */
    o->kill_points = NULL;
}

/* ---- open / close ---- */

static _Atomic int fiu_owned; /* FL3 */

static int status_of_errno(int e) {
    if (e < 0) e = -e;
    return e == ENOSPC || e == EDQUOT ? ENG_NOSPACE : e == ENOMEM ? ENG_NOMEM : ENG_IOERR;
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

/* Options that make no sense: ENG_INVALID.  Also folds the two classes
 * configured outside one_in[] into it (the stress driver may fill one_in[]
 * from option names generically, so either place is accepted; both set
 * and different is nonsense). */
static int normalize(const flt_options *in, flt_options *o) {
    *o = *in;
    if (!o->run_dir || !*o->run_dir) return ENG_INVALID;
    uint64_t k = o->one_in[FLT_KILL];
    if (k && o->kill_random_test && k != o->kill_random_test) return ENG_INVALID;
    if (!o->kill_random_test) o->kill_random_test = k;
    o->one_in[FLT_KILL] = o->kill_random_test;
    if (o->one_in[FLT_POWER_LOSS]) o->sync_fault_injection = 1;
    o->one_in[FLT_POWER_LOSS] = 0; /* not drawn here: the power-loss step decides */
    if (o->sync_fault_injection != 0 && o->sync_fault_injection != 1) o->sync_fault_injection = 1;
    if (o->kill_points && !o->kill_random_test) return ENG_INVALID; /* a list of points that would never be armed */
    if (o->kill_points && !flt_kill_points_valid(o->kill_points)) return ENG_INVALID;
    if (o->delay_sites && (!o->delay_one_in || flt_delay_sites_invalid(o->delay_sites))) return ENG_INVALID;
    if (o->fault_files && flt_fault_files_invalid(o->fault_files)) return ENG_INVALID;
    /* Injectors that work on files by name need the database directory. */
    if ((o->one_in[FLT_BITFLIP_PAGE] || o->one_in[FLT_BITFLIP_WAL] || o->sync_fault_injection) &&
        (!o->db_dir || !*o->db_dir))
        return ENG_INVALID;
    return ENG_OK;
}

int flt_open(const flt_options *opts, flt_ctx **out) {
    if (!out) return ENG_INVALID;
    *out = NULL;
    if (!opts) return ENG_INVALID;
    flt_options o;
    int rc = normalize(opts, &o);
    if (rc) return rc;
    int want_fiu = flt_fiu_wanted(&o);
    if (want_fiu && !eng_faults_compiled()) return ENG_NOTSUP;
    if (want_fiu) {
        int expect = 0;
        if (!atomic_compare_exchange_strong(&fiu_owned, &expect, 1)) return ENG_BUSY;
    }

    flt_ctx *f = calloc(1, sizeof *f);
    if (!f) {
        rc = ENG_NOMEM;
        goto fail_owned;
    }
    f->owns_fiu = want_fiu;
    flt_frame_init(f);
    int oom = 0;
    f->run_dir = dup_or_null(o.run_dir, &oom);
    f->db_dir = dup_or_null(o.db_dir, &oom);
    f->kill_points = dup_or_null(o.kill_points, &oom);
    f->delay_sites = dup_or_null(o.delay_sites, &oom);
    f->fault_files = dup_or_null(o.fault_files, &oom);
    if (oom) {
        rc = ENG_NOMEM;
        goto fail;
    }
    /* The copy in f->o points at our own strings, not the caller's. */
    f->o = o;
    f->o.run_dir = f->run_dir;
    f->o.db_dir = f->db_dir;
    f->o.kill_points = f->kill_points;
    f->o.delay_sites = f->delay_sites;
    f->o.fault_files = f->fault_files;
    if (f->db_dir) {
        f->db_dir_len = strlen(f->db_dir);
        while (f->db_dir_len > 1 && f->db_dir[f->db_dir_len - 1] == '/') f->db_dir[--f->db_dir_len] = 0;
    }
    for (int c = 0; c < FLT_STREAM_COUNT; c++) flt_rng_seed(&f->anon_rng[c], o.seed, -1, c);

    int e = flt_ledger_open(f->run_dir, &f->ledger);
    if (e < 0) {
        rc = status_of_errno(e);
        goto fail;
    }
    /* The journal: for power-loss simulation, and for sync_error, whose
     * drop of a file's unsynced writes it alone can tell (without a
     * database directory there is none: a failed fsync only fails). */
    if (o.sync_fault_injection || (o.one_in[FLT_SYNC_ERROR] && f->db_dir && *f->db_dir)) {
        e = flt_journal_open(f->run_dir, f->db_dir, &f->journal);
        if (e < 0) {
            rc = status_of_errno(e);
            goto fail;
        }
    }
    flt_hooks_init(f);
    rc = flt_fiu_setup(f);
    if (rc) goto fail;
    flt_kill_hooks(f);    /* after the door's kill points are set up */
    flt_door_io_hooks(f); /* in front of them */
    *out = f;
    return ENG_OK;

fail:
    flt_close(f);
    return rc;
fail_owned:
    if (want_fiu) atomic_store(&fiu_owned, 0);
    return rc;
}

void flt_close(flt_ctx *f) {
    if (!f) return;
    /* Disarm first: no engine thread reaches libfiu while the points go. */
    if (f->armed) {
        eng_faults_arm(0);
        f->armed = 0;
    }
    flt_fiu_teardown(f);
    if (f->owns_fiu) atomic_store(&fiu_owned, 0);
    if (f->journal) flt_journal_close(f->journal);
    if (f->ledger) flt_ledger_close(f->ledger);
    for (flt_thr *t = f->threads, *n; t; t = n) {
        n = t->next;
        flt_thr_free_bufs(t);
        free(t);
    }
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->dmg_mu);
    free(f->dmg);
    flt_cflips_free(f);
    free(f->run_dir);
    free(f->db_dir);
    free(f->kill_points);
    free(f->delay_sites);
    free(f->fault_files);
    free(f);
}

const eng_io_hooks *flt_hooks(flt_ctx *f) { return f ? &f->hooks : NULL; }

void flt_pause(flt_ctx *f, int paused) {
    if (!f) return;
    atomic_store(&f->paused, paused != 0);
    /* Disarmed, a point costs the engine one relaxed load instead of a
     * libfiu lookup; the points stay enabled for flt_pause(0). */
    if (f->armed) eng_faults_arm(!paused);
}
