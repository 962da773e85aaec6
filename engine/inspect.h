/*
 * inspect.h -- the window for inspection tools: the decoders of the file
 * formats (decode.h, included here) and a way to read a database
 * directory's control file and log without opening it (no lock, nothing
 * written), so that they work on a database the engine refuses to open.
 *
 * engine-tool includes engine.h, format.h and this header, nothing else
 * of the engine.  inspect.c sits on top of the control file and the WAL
 * reader; the lower layers take the decoders from decode.h, never from
 * here, so that no layer below inspect.c depends on it.
 */
#ifndef ENGINE_INSPECT_H
#define ENGINE_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "engine.h"
#include "format.h"

/* ---- a database directory, read from outside (inspect.c) -------------------- */

/* DIR opened for reading its files with the psync backend: no lock, no
 * recovery, nothing written. */
typedef struct insp_dir insp_dir;
int insp_open(const char *dir, insp_dir **out);
void insp_close(insp_dir *d);

/* Read and check DIR/control: *SEG_SIZE and *REDO_LSN.  ENG_NOTFOUND if
 * it does not exist, ENG_CORRUPTION with a report to FN if it does not
 * check, or an I/O status. */
int insp_read_control(insp_dir *d, uint64_t *seg_size, uint64_t *redo_lsn, eng_corruption_fn fn, void *ctx);

/* wal_oldest_record (wal.h) for DIR's log. */
int insp_oldest_record(insp_dir *d, uint64_t seg_size, uint64_t *lsn);

/* A reader of DIR's log from FROM (a record's position), as recovery
 * reads it; reports (W3) go to FN.  Then wal_reader_next, wal_reader_end
 * and wal_reader_close. */
int insp_log_open(insp_dir *d, uint64_t seg_size, uint64_t from, eng_corruption_fn fn, void *ctx, wal_reader **out);

#endif /* ENGINE_INSPECT_H */
