/*
 * control.h -- the control file: creation options and durable marks.
 *
 * The byte layout of DIR/control (CONTROL_SIZE = 512 bytes, one sector)
 * is drawn in format.h with its offsets and magic.  It is replaced
 * atomically: write-temp, fsync, rename, fsync-dir.
 */
#ifndef ENGINE_CONTROL_H
#define ENGINE_CONTROL_H

#include <stdint.h>
#include "format.h"
#include "io.h"
#include "status.h"

typedef struct control {
    uint32_t page_size;
    uint32_t flags;
    uint64_t hwm;
    uint64_t checkpoint_lsn;
    uint64_t redo_lsn;
    uint64_t last_seq;
    uint64_t seg_size;
    uint32_t wal_gen;
    uint64_t xid_limit;
} control;

/* Read and check DIR/control.  ENG_NOTFOUND if it does not exist;
 * ENG_CORRUPTION (reported, layer control) if it fails its checksum or
 * holds values out of range; ENG_NOTSUP (with a report of layer control
 * saying why) if it is a valid control file of an earlier format version,
 * whose pages this engine cannot read. */
int control_read(io_ctx *io, const char *dir, control *c, const eng_reporter *rep);

/* Replace DIR/control atomically with C (temp file, fsync, rename,
 * directory fsync).  On error the old control file is intact. */
int control_write(io_ctx *io, const char *dir, const control *c);

/* Encode / decode (decode returns ENG_CORRUPTION, or ENG_NOTSUP for an
 * earlier format version, without reporting, with a reason in WHY). */
void control_encode(const control *c, uint8_t buf[CONTROL_SIZE]);
int control_decode(const uint8_t buf[CONTROL_SIZE], control *c, const char **why);

#endif
