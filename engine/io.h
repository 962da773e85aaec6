/*
 * io.h -- the engine's one I/O interface (docs/engine.md, I/O).
 *
 * Every read, write, sync and file metadata operation of the engine passes
 * through here, so this is where the I/O hooks of engine.h (and the fault
 * points of engine/faultpoints.h) sit.  Two backends implement it:
 *   ENG_IO_URING  liburing: a small set of rings, each used under its own
 *                 mutex, so several threads submit at once; batched writes
 *                 are submitted together and reaped together.
 *   ENG_IO_PSYNC  pread / pwrite / fsync.
 * Both backends give the same results for the same calls, including short
 * transfers: the interface loops until the whole range is done, EOF is
 * reached (reads), or an error occurs.
 *
 * Errors: OS errors are translated here, once, into eng_status:
 *   ENOSPC, EDQUOT -> ENG_NOSPACE;  everything else -> ENG_IOERR.
 * The raw errno of the last failure is kept for messages (io_last_errno).
 *
 * Hook order for one operation (see eng_io_op in engine.h):
 *   before(op) -> [op->skip ? nothing : issue syscall/sqe] -> after(op)
 * For a batch, every before() runs before submission and every after() runs
 * in completion order, so a journal written by after() sees writes in the
 * order they completed relative to the next sync.
 */
#ifndef ENGINE_IO_H
#define ENGINE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "engine.h"

typedef struct io_ctx io_ctx;

/* An open file.  file_id is the stable id given to hooks; name is the path
 * relative to the database dir (for reports). */
typedef struct io_file {
    int fd;
    int file_id;
    char name[64];
    char path[4096];
    /* R1 (reads against a failing fsync): a failed fsync may have dropped
     * the file's dirty pages, so a read that completed while an fsync of
     * the file was in flight may hold contents older than what was
     * written.  io_read and io_read_batch wait for such fsyncs to end and
     * fail the read with ENG_POISONED if one failed: stale bytes never
     * reach a caller.  SYNC_FAILED stays set (the handle is poisoned by
     * its caller anyway); reads cost one atomic load while no fsync of
     * the file is in flight.
     * R2 (syncs after a failed fsync): once an fsync of the file failed,
     * no later one of it succeeds (ENG_POISONED) until the file is opened
     * again.  The kernel reports a write-back error once per open file,
     * so a second fsync may return 0 with the dropped pages still gone
     * (PostgreSQL's "fsyncgate"); a caller that raced the failure (a
     * checkpoint that started while another's fsync was failing) must
     * not take that 0 for durability. */
    _Atomic int syncs_active;
    _Atomic int sync_failed;
} io_file;

/* One write or read in a batch. */
typedef struct io_req {
    io_file *f;
    void *buf;
    size_t len;
    uint64_t offset;
    int status;  /* out: eng_status of this request */
    size_t done; /* out: bytes transferred (reads: may be < len at EOF) */
} io_req;

/* Create the I/O context for one database handle.  HOOKS may be NULL. */
int io_ctx_create(int backend, const eng_io_hooks *hooks, io_ctx **out);
void io_ctx_destroy(io_ctx *io);
int io_backend(const io_ctx *io);

/* Open (creating if CREATE and missing; the creation is a hooked
 * ENG_IO_CREATE operation) DIR/NAME into *F with FILE_ID. */
int io_open(io_ctx *io, const char *dir, const char *name, int file_id, int create, int read_only, io_file *f);
void io_close(io_ctx *io, io_file *f);

/* Read up to LEN bytes at OFFSET; *done gets the bytes read (less than LEN
 * only at end of file).  Retries short reads. */
int io_read(io_ctx *io, io_file *f, void *buf, size_t len, uint64_t offset, size_t *done);

/* Write exactly LEN bytes at OFFSET (retrying short writes). */
int io_write(io_ctx *io, io_file *f, const void *buf, size_t len, uint64_t offset);

/* Submit N requests together (uring: one submission, reaped as they
 * complete; psync: one after another).  Returns the first failing status,
 * ENG_OK if all succeeded; each req->status is set. */
int io_write_batch(io_ctx *io, io_req *reqs, size_t n);
int io_read_batch(io_ctx *io, io_req *reqs, size_t n);

/* fsync (data and metadata) of a file.  Covers only writes that have
 * completed before the call (all io_* calls complete before returning). */
int io_sync(io_ctx *io, io_file *f);
/* fdatasync: the data and whatever metadata reading it back needs (the
 * size), not the timestamps.  Same hook kind (ENG_IO_SYNC) and the same
 * guarantee for the file's bytes; a file rewritten in place (the WAL's
 * partial block, W1) then costs no journal commit per sync. */
int io_datasync(io_ctx *io, io_file *f);

/* File size in bytes (fstat; not hooked: it changes nothing). */
int io_size(io_ctx *io, io_file *f, uint64_t *size);

int io_truncate(io_ctx *io, io_file *f, uint64_t size);

/* Metadata operations on DIR/NAME, each hooked.  io_unlink returns
 * ENG_NOTFOUND when NAME does not exist (the kernel said ENOENT), so a
 * caller clearing a leftover can ignore exactly that and no other error. */
int io_rename(io_ctx *io, const char *dir, const char *from, const char *to);
int io_unlink(io_ctx *io, const char *dir, const char *name);
int io_dirsync(io_ctx *io, const char *dir);

/* errno of the last failed operation on this context (for messages). */
int io_last_errno(const io_ctx *io);

/* Translate -errno (or errno) into an eng_status. */
int io_status_from_errno(int err);

#endif /* ENGINE_IO_H */
