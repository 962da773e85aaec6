/*
 * promise_judge.c -- the engine's promise table (promises.h) as the
 * oracle asks it (vd_config.promise_of, rule V10 of oracle/verdict.h):
 * an injection's class and file become the table's class and file kind,
 * the run's options the row's options.
 */
#include <string.h>

#include "oracle/verdict.h"
#include "promises.h"
#include "stress_int.h"

const st_promises *st_promises_of(const st_engine *engine) {
    if (engine == &st_engine_rocksdb) return &st_promises_rocksdb;
    if (engine == &st_engine_sqlite) return &st_promises_sqlite;
    return &st_promises_ours;
}

/* Our engine's files by name (engine/format.h: data, wal/NNN, control),
 * for the rows of a kind; another engine's by its adapter. */
static const char *kind_of(const st_driver *d, const char *file) {
    if (!file || !*file) return NULL;
    if (!strcmp(file, ".") || file[strlen(file) - 1] == '/') return "dir"; /* the door's directory fsyncs */
    if (d->E->file_kind) return d->E->file_kind(file);
    if (!strcmp(file, "data")) return "data";
    if (!strncmp(file, "wal/", 4)) return "wal";
    if (!strncmp(file, "control", 7)) return "control";
    return NULL;
}

const st_promise *st_promise_judging(const st_driver *d, int cls, const char *file) {
    const char *kind = cls == VD_POWER_LOSS || cls == VD_KILL ? "any" : kind_of(d, file);
    return st_promise_find(st_promises_of(d->E), vd_class_name(cls), kind, st_open_options_value, &d->eo);
}

int st_promise_of(void *ctx, int cls, const char *file, int *as_corruption) {
    const st_promise *r = st_promise_judging(ctx, cls, file);
    *as_corruption = r && r->as_corruption;
    if (!r) return VD_PROMISE_DETECT;
    return r->promise == ST_PROMISE_NONE     ? VD_PROMISE_NONE
           : r->promise == ST_PROMISE_REPAIR ? VD_PROMISE_REPAIR
                                             : VD_PROMISE_DETECT;
}

int st_promise_none_possible(const st_driver *d) {
    static const char *const kinds[] = {"data", "wal", "control", "dir", NULL};
    for (int c = 0; c < VD_CLASS_COUNT; c++) {
        if (!d->vc.class_on[c] && !((c == VD_POWER_LOSS || c == VD_KILL) && d->crashed_before)) continue;
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            const st_promise *r =
                st_promise_find(st_promises_of(d->E), vd_class_name(c), kinds[k], st_open_options_value, &d->eo);
            if (r && r->promise == ST_PROMISE_NONE) return 1;
        }
    }
    return 0;
}
