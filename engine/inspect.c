/*
 * inspect.c -- a database directory read from outside (inspect.h): the
 * control file and the log through the engine's own readers, with a
 * psync I/O context of its own, no lock and nothing written.
 */
#include <stdlib.h>

#include "control.h"
#include "inspect.h"
#include "io.h"
#include "wal.h"

struct insp_dir {
    io_ctx *io;
    const char *dir;
};

int insp_open(const char *dir, insp_dir **out) {
    *out = NULL;
    insp_dir *d = calloc(1, sizeof *d);
    if (!d) return ENG_NOMEM;
    int st = io_ctx_create(ENG_IO_PSYNC, NULL, &d->io);
    if (st != ENG_OK) {
        free(d);
        return st;
    }
    d->dir = dir;
    *out = d;
    return ENG_OK;
}

void insp_close(insp_dir *d) {
    if (!d) return;
    io_ctx_destroy(d->io);
    free(d);
}

int insp_read_control(insp_dir *d, uint64_t *seg_size, uint64_t *redo_lsn, eng_corruption_fn fn, void *ctx) {
    control c;
    eng_reporter rep = {fn, ctx};
    int st = control_read(d->io, d->dir, &c, &rep);
    if (st == ENG_OK) {
        *seg_size = c.seg_size;
        *redo_lsn = c.redo_lsn;
    }
    return st;
}

int insp_oldest_record(insp_dir *d, uint64_t seg_size, uint64_t *lsn) {
    return wal_oldest_record(d->io, d->dir, seg_size, lsn);
}

int insp_log_open(insp_dir *d, uint64_t seg_size, uint64_t from, eng_corruption_fn fn, void *ctx, wal_reader **out) {
    eng_reporter rep = {fn, ctx};
    return wal_reader_open(d->io, d->dir, seg_size, from, 0, &rep, out);
}
