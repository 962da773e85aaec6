/*
 * control.h -- the control file: creation options and durable marks.
 *
 * Byte layout of DIR/control (CONTROL_SIZE = 512 bytes, one sector, so a
 * single write of it is not torn by 512-byte-atomic devices; it is also
 * replaced atomically by write-temp, fsync, rename, fsync-dir):
 *
 *   offset size field
 *   0      8    ct_magic          "ENGCTL01"
 *   8      4    ct_version        1
 *   12     4    ct_page_size
 *   16     4    ct_flags          bit 0: data_checksums
 *   20     4    (zero)
 *   24     8    ct_hwm            durable high-water mark: every block below
 *                                 it has been written and synced at least once
 *   32     8    ct_checkpoint_lsn LSN of the last checkpoint record
 *   40     8    ct_redo_lsn       where recovery starts replaying
 *   48     8    ct_last_seq       last commit sequence at the redo point
 *   56     8    ct_seg_size       WAL segment bytes
 *   64     4    ct_wal_gen        WAL generation: raised (and this file
 *                                 rewritten) on every open, before any
 *                                 WAL block is written
 *   68     4    (zero)
 *   72     8    ct_xid_limit      transaction ids at or above it were never
 *                                 used: raised (and this file rewritten)
 *                                 before a batch takes an id at or above
 *                                 it, so ids are never reused even when a
 *                                 crash loses log records whose versions
 *                                 reached a page (0 in older files)
 *   80     424  (zero)
 *   504    8    ct_checksum       XXH3-64 of bytes [0, 504)
 */
#ifndef ENGINE_CONTROL_H
#define ENGINE_CONTROL_H

#include <stdint.h>
#include "io.h"
#include "status.h"

#define CONTROL_SIZE 512u
#define CONTROL_NAME "control"
#define CONTROL_FLAG_CHECKSUMS 0x1u

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
 * holds values out of range. */
int control_read(io_ctx *io, const char *dir, control *c, const eng_reporter *rep);

/* Replace DIR/control atomically with C (temp file, fsync, rename,
 * directory fsync).  On error the old control file is intact. */
int control_write(io_ctx *io, const char *dir, const control *c);

/* Encode / decode (decode returns ENG_CORRUPTION without reporting, with a
 * reason in WHY). */
void control_encode(const control *c, uint8_t buf[CONTROL_SIZE]);
int control_decode(const uint8_t buf[CONTROL_SIZE], control *c, const char **why);

#endif
