/*
 * control.c -- read and atomically replace the control file (layout in
 * format.h).
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "control.h"
#include "faultpoints.h"
#include "page.h"

#ifdef ENG_BROKEN_CONTROL_SUM_SKIPS_LEASE
/* planted bug (tests/mutants.txt): the checksum still covers only the
 * fields of version 1, up to the transaction-id lease added in version 2:
 * damage to ct_xid_limit (or to the zero bytes after it) passes as a valid
 * control file, with no report; a lease flipped upwards sends the ids past
 * the commit log's reach (the open's settling of the ids runs for ever, or
 * every write fails with ENG_NOSPACE). */
#define CT_SUMMED CT_XID_LIMIT_OFF
#else
#define CT_SUMMED CT_SUM_OFF
#endif

void control_encode(const control *c, uint8_t buf[CONTROL_SIZE]) {
    memset(buf, 0, CONTROL_SIZE);
    wr64(buf + CT_MAGIC_OFF, CT_MAGIC);
    wr32(buf + CT_VERSION_OFF, CT_VERSION);
    wr32(buf + CT_PAGE_SIZE_OFF, c->page_size);
    wr32(buf + CT_FLAGS_OFF, c->flags);
    wr64(buf + CT_HWM_OFF, c->hwm);
    wr64(buf + CT_CHECKPOINT_LSN_OFF, c->checkpoint_lsn);
#ifdef ENG_BROKEN_CONTROL_REDO_IS_CHECKPOINT
    /* planted bug (tests/mutants.txt): the redo point stored is the
     * checkpoint record's LSN, not where the checkpoint began: records
     * logged while it flushed pages are never replayed. */
    wr64(buf + CT_REDO_LSN_OFF, c->checkpoint_lsn);
#else
    wr64(buf + CT_REDO_LSN_OFF, c->redo_lsn);
#endif
    wr64(buf + CT_LAST_SEQ_OFF, c->last_seq);
    wr64(buf + CT_XID_LIMIT_OFF, c->xid_limit);
    wr64(buf + CT_SEG_SIZE_OFF, c->seg_size);
    wr32(buf + CT_WAL_GEN_OFF, c->wal_gen);
    wr64(buf + CT_SUM_OFF, XXH3_64bits(buf, CT_SUMMED));
}

int control_decode(const uint8_t buf[CONTROL_SIZE], control *c, const char **why) {
    uint64_t sum = XXH3_64bits(buf, CT_SUMMED);
    if (rd64(buf + CT_SUM_OFF) != sum) {
        *why = "checksum mismatch";
        return ENG_CORRUPTION;
    }
    if (rd64(buf + CT_MAGIC_OFF) != CT_MAGIC) {
        *why = "bad magic";
        return ENG_CORRUPTION;
    }
    uint32_t version = rd32(buf + CT_VERSION_OFF);
    if (version == 2) {
        /* A whole, valid control file of the format before this one: not
         * damage, a database this engine cannot read. */
        *why = "format version 2 (XXH3-64 page checksums), not this engine's 3 (the page hash of format.h): "
               "open it with the engine that wrote it";
        return ENG_NOTSUP;
    }
    if (version != CT_VERSION) {
        *why = "unknown version";
        return ENG_CORRUPTION;
    }
    c->page_size = rd32(buf + CT_PAGE_SIZE_OFF);
    c->flags = rd32(buf + CT_FLAGS_OFF);
    c->hwm = rd64(buf + CT_HWM_OFF);
    c->checkpoint_lsn = rd64(buf + CT_CHECKPOINT_LSN_OFF);
    c->redo_lsn = rd64(buf + CT_REDO_LSN_OFF);
    c->last_seq = rd64(buf + CT_LAST_SEQ_OFF);
    c->xid_limit = rd64(buf + CT_XID_LIMIT_OFF);
    c->seg_size = rd64(buf + CT_SEG_SIZE_OFF);
    c->wal_gen = rd32(buf + CT_WAL_GEN_OFF);
    if (c->seg_size < (64u << 10) || c->seg_size > (1ull << 32) || (c->seg_size & (c->seg_size - 1))) {
        *why = "WAL segment size out of range";
        return ENG_CORRUPTION;
    }
    if (c->redo_lsn > c->checkpoint_lsn) {
        *why = "redo point after the checkpoint";
        return ENG_CORRUPTION;
    }
    if (c->page_size != 4096 && c->page_size != 8192 && c->page_size != 16384) {
        *why = "page size out of range";
        return ENG_CORRUPTION;
    }
    if (c->flags & ~CONTROL_FLAG_CHECKSUMS) {
        *why = "unknown flags";
        return ENG_CORRUPTION;
    }
    if (c->hwm > UINT32_MAX) {
        *why = "high-water mark out of range";
        return ENG_CORRUPTION;
    }
    return ENG_OK;
}

int control_read(io_ctx *io, const char *dir, control *c, const eng_reporter *rep) {
    io_file f;
    int rc = io_open(io, dir, CONTROL_NAME, -1, 0, 1, &f);
    if (rc != ENG_OK) return io_last_errno(io) == ENOENT ? ENG_NOTFOUND : rc;
    uint8_t buf[CONTROL_SIZE];
    size_t done = 0;
    rc = io_read(io, &f, buf, sizeof buf, 0, &done);
    io_close(io, &f);
    if (rc != ENG_OK) return rc;
    if (done != CONTROL_SIZE)
        return eng_report(rep, ENG_LAYER_CONTROL, CONTROL_NAME, -1, (int64_t)done, -1, CONTROL_SIZE, done,
                          "control file is %zu bytes, expected %u", done, CONTROL_SIZE);
    const char *why = NULL;
    rc = control_decode(buf, c, &why);
    if (rc == ENG_NOTSUP) {
        /* The report carries the reason; the status says it is no damage. */
        eng_report(rep, ENG_LAYER_CONTROL, CONTROL_NAME, -1, CT_VERSION_OFF, -1, CT_VERSION, rd32(buf + CT_VERSION_OFF),
                   "control file: %s", why);
        return ENG_NOTSUP;
    }
    if (rc != ENG_OK)
        return eng_report(rep, ENG_LAYER_CONTROL, CONTROL_NAME, -1, 0, -1, rd64(buf + CT_SUM_OFF),
                          XXH3_64bits(buf, CT_SUMMED), "control file: %s", why);
    return ENG_OK;
}

int control_write(io_ctx *io, const char *dir, const control *c) {
    static const char tmp[] = CONTROL_NAME ".tmp";
    uint8_t buf[CONTROL_SIZE];
    control_encode(c, buf);
    /* A leftover from a crash; absent is fine, any other failure is the
     * caller's (an unlink that failed may have left the file). */
    int rc = io_unlink(io, dir, tmp);
    if (rc != ENG_OK && rc != ENG_NOTFOUND) return rc;
    io_file f;
    rc = io_open(io, dir, tmp, -1, 1, 0, &f);
    if (rc != ENG_OK) return rc;
#ifdef ENG_BROKEN_CONTROL_WRITE_ERROR_IGNORED
    /* planted bug (tests/mutants.txt): the write's status is dropped and
     * only the fsync's is kept: a write of control.tmp that failed leaves
     * it empty (or short), the fsync of what is there succeeds, and the
     * rename puts it in place of the good control file: the caller is told
     * the checkpoint (or lease) is done, and the next open finds no valid
     * control file (the database does not reopen). */
    (void)io_write(io, &f, buf, sizeof buf, 0);
    rc = io_sync(io, &f);
#else
    rc = io_write(io, &f, buf, sizeof buf, 0);
    if (rc == ENG_OK) rc = io_sync(io, &f);
#endif
    io_close(io, &f);
    if (rc == ENG_OK) ENG_KILL_POINT(FP_KILL_CONTROL);
    if (rc == ENG_OK) rc = io_rename(io, dir, tmp, CONTROL_NAME);
#ifdef ENG_BROKEN_CONTROL_RENAME_NOT_DIRSYNCED
        /* planted bug (tests/mutants.txt): the directory is not fsynced after
     * the rename, so a power loss may bring the previous control file back
     * (an older redo point, whose segments the checkpoint removed). */
#else
    if (rc == ENG_OK) rc = io_dirsync(io, dir);
#endif
    return rc;
}
