/*
 * doorio.c -- the I/O error classes at the door's calls, for an engine
 * with no fault points of its own (flt_options.via_door with a
 * file_kind: RocksDB, SQLite).
 *
 * Our engine's read, write and meta points (fiu.c) fail its I/O inside
 * the engine; another engine's calls reach the fault library only as the
 * door's eng_io_ops, so the draw is made in before(), in front of the
 * kill points and inject.c's hooks, from the same streams and odds:
 *
 *   op kind                               classes drawn          errno
 *   READ (inside the file)                read_error             EIO
 *   WRITE                                 write_error, nospace   EIO, ENOSPC
 *   CREATE RENAME UNLINK TRUNCATE DIRSYNC write_error            EIO
 *
 * A failed call issues nothing: no byte moves, the journal records
 * nothing and no after() follows (the ledger line comes first, FL1).
 * A read inside the file or a write that fails with none of them may be
 * cut short (short_io, point door/io/short): its len becomes a drawn
 * part of the range, 1 byte up to all but one, and the door returns that
 * count to the caller as a kernel may (eng_io_op.short_count); the rest
 * is not transferred, and the caller must ask again for it.  The line's
 * offset and len are the bytes not moved, as a torn write's are.  Only a
 * call that can return a count is cut (the door's fallocate zeroing
 * cannot).
 * A write that none of them fails, or a read that moved bytes, may carry
 * one flipped bit (bitflip_inflight, points door/inflight/write and
 * door/inflight/read): a write goes out from a copy of the caller's
 * bytes with the bit flipped (the caller's buffer is never changed), a
 * read hands the caller its bytes with the bit flipped after the next
 * after() saw them; the line names the file (region: its kind), the 4
 * KiB block of the flipped byte and the bit within that block (as
 * doordisk.c places its damage), and the transfer in its note.  What is on disk after a
 * read's flip is unchanged; a write's flip stays until the engine writes
 * those bytes again, and follows its file through a rename (a ledger
 * line of class "moved": file, to).  Neither goes into damage.c's table (doordisk.c
 * says why): the engine's promise table for the file's kind judges.
 * sync_error stays inject.c's (hook/sync, with the drop of the file's
 * dirty data), as for every engine; this before() only tells it which
 * files it may strike (the flag fault_files sets, t->file_off).  Ledger points door/io/read,
 * door/io/write, door/io/meta, door/io/short; file: the path below the database
 * directory ("." for a fsync of the directory itself).  A file of no
 * kind (an info log, a lock file) draws nothing, and with fault_files
 * only the kinds named draw.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "delay_int.h"
#include "doordisk_int.h"
#include "doorio_int.h"
#include "fileid.h"
#include "inject_int.h"


static const char *point_of(int cls, int kind) {
    if (cls == FLT_SHORT_IO) return "door/io/short";
    return kind == ENG_IO_READ ? "door/io/read" : kind == ENG_IO_WRITE ? "door/io/write" : "door/io/meta";
}

static int is_db_dir(const flt_ctx *f, const char *path) {
    return path && !strncmp(path, f->db_dir, f->db_dir_len) &&
           (!path[f->db_dir_len] || !strcmp(path + f->db_dir_len, "/"));
}

/* 1 if read OP starts at or past its file's end (a size it cannot learn
 * counts as inside). */
static int past_end(const eng_io_op *op) {
    uint64_t size;
    return op->path && !flt_size_at(AT_FDCWD, op->path, 0, &size) && op->offset >= size;
}

/* The class OP fails with (its errno in *ERR), or -1: one draw per class
 * the op kind may fail with, in a fixed order. */
static int draw_error(flt_ctx *f, flt_thr *t, const eng_io_op *op, int *err) {
    switch (op->kind) {
    case ENG_IO_READ:
        /* A read at or past the file's end touches no device: it returns
         * 0 bytes and cannot fail with EIO (the drawn firing is let go). */
        if (flt_draw(f, t, FLT_READ_ERROR) && !past_end(op)) return *err = EIO, FLT_READ_ERROR;
        return -1;
    case ENG_IO_WRITE: {
        int eio = flt_draw(f, t, FLT_WRITE_ERROR), enospc = flt_draw(f, t, FLT_NOSPACE);
        if (eio) return *err = EIO, FLT_WRITE_ERROR;
        if (enospc) return *err = ENOSPC, FLT_NOSPACE;
        return -1;
    }
    case ENG_IO_CREATE:
    case ENG_IO_RENAME:
    case ENG_IO_UNLINK:
    case ENG_IO_TRUNCATE:
    case ENG_IO_DIRSYNC:
        if (flt_draw(f, t, FLT_WRITE_ERROR)) return *err = EIO, FLT_WRITE_ERROR;
        return -1;
    default: return -1;
    }
}

/* short_io for OP: 1 with its len cut to the bytes that move (the
 * first CUT of the range), else 0. */
static int draw_short(flt_ctx *f, flt_thr *t, eng_io_op *op, uint64_t *cut) {
    if ((op->kind != ENG_IO_READ && op->kind != ENG_IO_WRITE) || op->short_count != 1 || op->len < 2) return 0;
    if (!flt_draw(f, t, FLT_SHORT_IO)) return 0;
    /* A read at or past the end moves nothing anyway: no cut to make. */
    if (op->kind == ENG_IO_READ && past_end(op)) return 0;
    *cut = 1 + flt_below(f, t, FLT_SHORT_IO, (uint64_t)op->len - 1);
    return 1;
}

/* The ledger line of bit BIT of OP's transfer flipped at POINT: placed
 * as doordisk.c places damage, by the 4 KiB block of the flipped byte
 * and the bit within that block (V1 matches a report there); the
 * transfer's own range goes into the note (NOTE, CAP). */
static flt_event flip_event(flt_ctx *f, flt_thr *t, const char *point, const eng_io_op *op, const char *kind,
                            uint64_t bit, char *note, size_t cap) {
    uint64_t at = op->offset + bit / 8;
    flt_event e = flt_event_for(f, t, FLT_BITFLIP_INFLIGHT, point);
    e.file = flt_rel_path(f, op->path);
    e.region = kind;
    e.block = (int64_t)(at / FLT_DOOR_BLOCK);
    e.bit = (int64_t)((at % FLT_DOOR_BLOCK) * 8 + bit % 8);
    e.mask = 1u << (bit % 8);
    snprintf(note, cap, "one bit of a %s of %llu bytes at offset %llu", op->kind == ENG_IO_READ ? "read" : "write",
             (unsigned long long)(op->kind == ENG_IO_READ ? (uint64_t)op->result : op->len),
             (unsigned long long)op->offset);
    e.note = note;
    return e;
}

/* The slot of door_flipped holding NAME, or -1 (caller holds f->mu). */
static int flipped_index(const flt_ctx *f, const char *name) {
    unsigned n = f->door_nflipped < 16 ? f->door_nflipped : 16;
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(f->door_flipped[i], name)) return (int)i;
    return -1;
}

/* bitflip_inflight on a write OP of a file of KIND: its bytes replaced
 * by T's copy of them with one bit flipped. */
static void flip_write(flt_ctx *f, flt_thr *t, eng_io_op *op, const char *kind) {
    if (op->kind != ENG_IO_WRITE || !op->len || !flt_draw(f, t, FLT_BITFLIP_INFLIGHT)) return;
    uint8_t *copy = flt_buf_take(t, op->len);
    if (!copy) return;
    uint64_t bit = flt_below(f, t, FLT_BITFLIP_INFLIGHT, (uint64_t)op->len * 8);
    char note[96];
    flt_event e = flip_event(f, t, "door/inflight/write", op, kind, bit, note, sizeof note);
    if (flt_record(f, FLT_BITFLIP_INFLIGHT, &e) != 0) { /* FL1: no line, no fault */
        flt_buf_give(t, copy);
        return;
    }
    memcpy(copy, op->buf, op->len);
    copy[bit / 8] ^= (uint8_t)e.mask;
    op->buf = copy;
    pthread_mutex_lock(&f->mu);
    if (flipped_index(f, e.file) < 0)
        snprintf(f->door_flipped[f->door_nflipped++ % 16], sizeof f->door_flipped[0], "%s", e.file);
    pthread_mutex_unlock(&f->mu);
}

/* A rename done of a file a write's flip went to: a ledger line of class
 * "moved" (no fault: the oracle names the file's flips by its new name,
 * where a report will place them; RocksDB writes CURRENT as a temporary
 * it renames). */
static void note_moved(flt_ctx *f, flt_thr *t, const eng_io_op *op) {
    if (op->kind != ENG_IO_RENAME || !op->path2) return;
    const char *from = flt_rel_path(f, op->path);
    pthread_mutex_lock(&f->mu);
    int k = from ? flipped_index(f, from) : -1;
    if (k >= 0) {
        flt_event e = flt_event_none("moved", "door/rename");
        e.file = from;
        e.to = flt_rel_path(f, op->path2);
        e.thread = t ? t->thread : -1;
        if (flt_ledger_append_seq(f->ledger, &e, NULL) == 0)
            snprintf(f->door_flipped[k], sizeof f->door_flipped[0], "%s", e.to);
    }
    pthread_mutex_unlock(&f->mu);
}

/* 1 if a file of KIND draws no class: a file of no kind (an info log, a
 * lock file) is not the database's, and fault_files narrows the kinds. */
static int kind_off(const flt_ctx *f, const char *kind) {
    return !kind || (f->o.fault_files && !flt_list_has(f->o.fault_files, kind));
}

static int doorio_before(void *ctx, eng_io_op *op) {
    flt_ctx *f = ctx;
    flt_thr *t = flt_thr_get(f);
    if (t && !flt_paused(f)) {
        const char *kind = flt_file_kind(f, op);
        t->file_off = kind_off(f, kind);
        int err = 0, cls = draw_error(f, t, op, &err);
        uint64_t cut = 0;
        if (cls < 0 && draw_short(f, t, op, &cut)) cls = FLT_SHORT_IO;
        if (cls == FLT_SHORT_IO) {
            flt_event e = flt_event_for(f, t, cls, point_of(cls, op->kind));
            e.file = flt_rel_path(f, op->path);
            e.offset = (int64_t)(op->offset + cut);
            e.len = (int64_t)(op->len - cut);
            if (flt_record(f, cls, &e) == 0) { /* FL1: no line, no fault */
                op->len = (size_t)cut;
                op->short_count = 2;
            }
        } else if (cls >= 0) {
            flt_event e = flt_event_for(f, t, cls, point_of(cls, op->kind));
            /* A directory's fsync names the directory: "." for the
             * database's own (its kind, dir, in the promise tables). */
            e.file = op->kind == ENG_IO_DIRSYNC && is_db_dir(f, op->path) ? "." : flt_rel_path(f, op->path);
            e.err = err == ENOSPC ? "ENOSPC" : "EIO";
            if (op->kind == ENG_IO_READ || op->kind == ENG_IO_WRITE) {
                e.offset = (int64_t)op->offset;
                e.len = (int64_t)op->len;
            }
            if (flt_record(f, cls, &e) == 0) { /* FL1: no line, no fault */
                flt_delay_fault(f, t);         /* a failing device is slow to say so */
                return -err;
            }
        }
        if (cls < 0 && !t->file_off) flip_write(f, t, op, kind);
    }
    const void *mine = op->buf;
    int rc = f->door_io_next(ctx, op);
    if (rc < 0) flt_buf_give(t, mine); /* not issued: no after() gives the copy back */
    return rc;
}

/* bitflip_inflight on a read OP that moved bytes: one of them flipped in
 * the caller's hands, after the next after() saw them. */
static void doorio_after(void *ctx, eng_io_op *op) {
    flt_ctx *f = ctx;
    f->door_io_after_next(ctx, op);
    if (op->kind == ENG_IO_RENAME && op->result == 0) note_moved(f, flt_thr_get(f), op);
    if (op->kind != ENG_IO_READ || op->result <= 0 || flt_paused(f)) return;
    flt_thr *t = flt_thr_get(f);
    const char *kind = flt_file_kind(f, op);
    if (!t || kind_off(f, kind)) return;
    if (!flt_draw(f, t, FLT_BITFLIP_INFLIGHT)) return;
    uint64_t bit = flt_below(f, t, FLT_BITFLIP_INFLIGHT, (uint64_t)op->result * 8);
    char note[96];
    flt_event e = flip_event(f, t, "door/inflight/read", op, kind, bit, note, sizeof note);
    if (flt_record(f, FLT_BITFLIP_INFLIGHT, &e) == 0) ((uint8_t *)op->buf)[bit / 8] ^= (uint8_t)e.mask;
}

void flt_door_io_hooks(flt_ctx *f) {
    const flt_options *o = &f->o;
    int on = o->one_in[FLT_READ_ERROR] || o->one_in[FLT_WRITE_ERROR] || o->one_in[FLT_NOSPACE] ||
             o->one_in[FLT_SHORT_IO] || o->one_in[FLT_SYNC_ERROR] || o->one_in[FLT_BITFLIP_INFLIGHT];
    if (!o->via_door || !o->file_kind || !on) return;
    f->door_io_next = f->hooks.before;
    f->hooks.before = doorio_before;
    if (o->one_in[FLT_BITFLIP_INFLIGHT]) {
        f->door_io_after_next = f->hooks.after;
        f->hooks.after = doorio_after;
    }
}
