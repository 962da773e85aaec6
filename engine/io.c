/*
 * io.c -- the engine's one I/O layer: the io_uring and pread/pwrite
 * backends behind io.h, and the place where the I/O hooks of engine.h run.
 *
 * Every read, write, sync and metadata operation of the engine comes
 * through here, so a fault library that installs eng_io_hooks sees (and may
 * alter) all of them, and OS errors are translated into eng_status in one
 * place (io_status_from_errno).
 *
 * Backends
 *   ENG_IO_URING  IO_NRINGS rings of IO_RING_DEPTH entries, each guarded by
 *                 its own mutex.  A call takes the first free ring
 *                 (trylock, round-robin start) and blocks on one only when
 *                 all are busy, so several threads do I/O at once.  The
 *                 ring is held only while requests are in flight: hooks
 *                 run outside it.
 *   ENG_IO_PSYNC  pread / pwrite / fsync on the calling thread.
 *
 * One logical operation (a read, write or sync the caller asked for) goes:
 *
 *     before(op) --rc<0--> fail with rc (nothing issued, no after)
 *         |
 *         +-- op.skip --> result = original len (nothing issued)
 *         |
 *         +-- issue op.buf/op.offset/op.len, resubmitting the rest of a
 *             short transfer until done, EOF (reads: a 0-byte result)
 *             or an error
 *         v
 *     op.result = bytes or -errno --> after(op) --> status
 *
 * Invariants:
 *   IO1  before() and after() are called once per logical operation, never
 *        per resubmission of a short transfer.
 *   IO2  In a batch, every before() of a submission window runs before the
 *        window is submitted, and the after()s run in completion order
 *        before the batch call returns (so before anything the caller
 *        orders after it, such as a sync).
 *   IO3  A write whose length a hook shortened (a torn write) or skipped (a
 *        lost write) is reported to the caller as complete: the caller's
 *        contract does not change, only the disk does.
 *   IO4  Both backends produce the same results and the same hook calls
 *        for the same requests.
 */
#include "io.h"
#include "faultpoints.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Four rings let four threads (buffer-pool readers, the writer, the
 * checkpointer) submit at once; 64 entries cover a full write-back batch
 * window without making each ring's memory noticeable. */
#define IO_NRINGS     4
#define IO_RING_DEPTH 64

/* Largest single transfer handed to the kernel: cqe->res is an int and
 * Linux caps one read/write near 2 GiB anyway; the short-transfer loop
 * does the rest. */
#define IO_MAX_XFER ((size_t)1 << 30)

typedef struct io_ring {
    pthread_mutex_t mu;
    struct io_uring ring;
    /* errno of a failed io_uring_enter that left requests in an unknown
     * state; the ring is then never used again (0 = healthy). */
    int broken;
} __attribute__((aligned(64))) io_ring; /* one cache line apart: no false sharing of locks */

struct io_ctx {
    int backend;
    int nrings;                /* rings initialised (uring only) */
    const eng_io_hooks *hooks; /* caller-owned, outlives the context */
    atomic_int last_errno;
    atomic_uint next_ring;
    io_ring rings[IO_NRINGS];
};

/* Per-request state of one read/write while it is being carried out. */
typedef struct rw_state {
    eng_io_op op; /* what the hooks see and may change */
    size_t want;  /* the caller's length */
    size_t pos;   /* bytes of op.len done so far */
    size_t sent;  /* bytes of op.len handed to the OS so far (op.issued) */
    int err;      /* positive errno once failed, else 0 */
    int state;    /* RW_* */
} rw_state;

enum {
    RW_FAILED_BEFORE, /* before() failed it: no after() */
    RW_DONE,          /* finished (done, skipped, EOF or error): after() due */
    RW_PENDING        /* still has bytes to transfer */
};

/* ---- errors ------------------------------------------------------------ */

int io_status_from_errno(int err) {
    if (err < 0) err = -err;
    if (err == 0) return ENG_OK;
    if (err == ENOSPC || err == EDQUOT) return ENG_NOSPACE;
    return ENG_IOERR;
}

/* Remember ERR (either sign) as the context's last errno and translate it. */
static int io_fail(io_ctx *io, int err) {
    if (err < 0) err = -err;
    atomic_store_explicit(&io->last_errno, err, memory_order_relaxed);
    return io_status_from_errno(err);
}

int io_last_errno(const io_ctx *io) { return atomic_load_explicit(&((io_ctx *)io)->last_errno, memory_order_relaxed); }

/* ---- hooks ------------------------------------------------------------- */

/* Run before() on OP.  Returns 0 to proceed, or a negative errno to fail
 * the operation unissued (a hook returning a positive value is taken as
 * that errno rather than ignored, so a sign slip cannot swallow a fault). */
static int hook_before(io_ctx *io, eng_io_op *op) {
    /* The engine's own fault points come first: they model the call
     * failing in the kernel, before any hook sees it issued.  Except an
     * fsync's (do_sync): the hooks see that one issued and its failure in
     * after(), where a fault library may drop the file's dirty data as
     * Linux may when an fsync fails. */
    if (op->kind != ENG_IO_SYNC) {
        int fp = op->kind == ENG_IO_READ ? FP_IO_READ : op->kind == ENG_IO_WRITE ? FP_IO_WRITE : FP_IO_META;
        int injected = ENG_FAULT(fp);
        if (injected) return -injected;
    }
    const eng_io_hooks *h = io->hooks;
    if (!h || !h->before) return 0;
    int rc = h->before(h->ctx, op);
    return rc > 0 ? -rc : rc;
}

/* Run after() on OP (op->result already set) and turn the final result
 * into a status. */
static int hook_after(io_ctx *io, eng_io_op *op) {
    const eng_io_hooks *h = io->hooks;
    if (h && h->after) h->after(h->ctx, op);
    if (op->result < 0) return io_fail(io, (int)-op->result);
    return ENG_OK;
}

/* A metadata or sync operation whose body is one call.  DO_IT returns 0 or
 * -errno and is not called when the hook fails or skips the operation. */
static int hooked_op(io_ctx *io, eng_io_op *op, int (*do_it)(io_ctx *, eng_io_op *, void *), void *arg) {
    int rc = hook_before(io, op);
    if (rc < 0)
#ifdef ENG_BROKEN_HOOK_ERROR_ISSUED_ANYWAY
        /* planted bug (tests/mutants.txt): the return is missing, so a
         * sync or metadata operation failed by before() is still issued
         * and the real call's result is reported instead of the failure. */
        io_fail(io, rc);
#else
        return io_fail(io, rc);
#endif
    op->result = op->skip ? 0 : do_it(io, op, arg);
    return hook_after(io, op);
}

/* ---- rings --------------------------------------------------------------- */

/* Take a ring: the first one whose lock is free, starting round-robin so
 * threads spread out; if all are busy, wait for the starting one. */
static io_ring *ring_acquire(io_ctx *io) {
    unsigned start = atomic_fetch_add_explicit(&io->next_ring, 1, memory_order_relaxed);
    for (int i = 0; i < io->nrings; i++) {
        io_ring *r = &io->rings[(start + (unsigned)i) % (unsigned)io->nrings];
        if (pthread_mutex_trylock(&r->mu) == 0) return r;
    }
    io_ring *r = &io->rings[start % (unsigned)io->nrings];
    pthread_mutex_lock(&r->mu);
    return r;
}

static void ring_release(io_ring *r) { pthread_mutex_unlock(&r->mu); }

/* Errors of io_uring_enter that mean "try again", not "requests lost". */
static int ring_transient(int rc) { return rc == -EINTR || rc == -EAGAIN || rc == -EBUSY; }

/* Submit whatever is queued and wait for one completion; *cqe gets it.
 * Returns 0 or -errno; on a non-transient error the ring is marked broken
 * (requests may be in flight in the kernel that we can no longer reap). */
static int ring_next_cqe(io_ring *r, struct io_uring_cqe **cqe) {
    for (;;) {
        int rc;
        if (io_uring_sq_ready(&r->ring) > 0) {
            rc = io_uring_submit_and_wait(&r->ring, 1);
            if (rc < 0 && !ring_transient(rc)) goto broken;
        }
        rc = io_uring_peek_cqe(&r->ring, cqe);
        if (rc == 0) return 0;
        if (io_uring_sq_ready(&r->ring) > 0) continue; /* partial submission: submit the rest first */
        rc = io_uring_wait_cqe(&r->ring, cqe);
        if (rc == 0) return 0;
        if (!ring_transient(rc)) goto broken;
        continue;
    broken:
        r->broken = -rc;
        return rc;
    }
}

/* An sqe on R; the ring has room by construction (at most IO_RING_DEPTH
 * requests are in flight and the queue is flushed before waiting), but
 * flush once if it does not. */
static struct io_uring_sqe *ring_sqe(io_ring *r) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) {
        io_uring_submit(&r->ring);
        sqe = io_uring_get_sqe(&r->ring);
    }
    return sqe;
}

/* fsync FD through a ring (FLAGS 0: data and metadata; IORING_FSYNC_DATASYNC:
 * fdatasync).  0 or -errno. */
static int ring_fsync(io_ctx *io, int fd, unsigned flags) {
    io_ring *r = ring_acquire(io);
    int res;
    if (r->broken) {
        res = -r->broken;
        goto out;
    }
    struct io_uring_sqe *sqe = ring_sqe(r);
    if (!sqe) {
        res = -EBUSY;
        goto out;
    }
    io_uring_prep_fsync(sqe, fd, flags);
    io_uring_sqe_set_data64(sqe, 0);
    struct io_uring_cqe *cqe;
    res = ring_next_cqe(r, &cqe);
    if (res == 0) {
        res = cqe->res;
        io_uring_cqe_seen(&r->ring, cqe);
    }
out:
    ring_release(r);
    return res > 0 ? 0 : res;
}

/* ---- reads and writes ------------------------------------------------------ */

/* Set up S for REQ and run before().  Leaves S RW_PENDING when there is
 * something to transfer. */
static void rw_prepare(io_ctx *io, int kind, io_req *req, rw_state *s) {
    s->op = (eng_io_op){
        .kind = kind,
        .file_id = req->f->file_id,
        .path = req->f->path,
        .path2 = NULL,
        .buf = req->buf,
        .offset = req->offset,
        .len = req->len,
        .skip = 0,
        .result = 0,
        .issued = 0,
    };
    s->want = req->len;
    s->pos = s->sent = 0;
    s->err = 0;
    int rc = hook_before(io, &s->op);
    if (rc < 0) {
        s->err = -rc;
        s->state = RW_FAILED_BEFORE;
        return;
    }
    /* A hook may only shorten a transfer into the caller's own buffer:
     * lengthening it would read or write past the end of that buffer. */
    if (s->op.buf == req->buf && s->op.len > s->want) s->op.len = s->want;
    s->state = (s->op.skip || s->op.len == 0) ? RW_DONE : RW_PENDING;
}

/* Account for one transfer result RES (bytes or -errno) of S. */
static void rw_progress(int kind, rw_state *s, long res) {
    if (res == -EINTR || res == -EAGAIN) return; /* not done: issue the same range again */
    if (res < 0) {
        s->err = (int)-res;
        s->state = RW_DONE;
    } else if (res == 0) {
        /* EOF for a read; a write that makes no progress would loop for
         * ever, so it is an I/O error. */
        if (kind == ENG_IO_WRITE) s->err = EIO;
        s->state = RW_DONE;
    } else {
        s->pos += (size_t)res;
        assert(s->pos <= s->sent && s->sent <= s->op.len); /* never more than was handed over */
#ifdef ENG_BROKEN_SHORT_WRITE_COUNTS_AS_DONE
        /* planted bug (tests/mutants.txt): a write is taken as finished after
         * its first transfer, as if pwrite never returned short: the rest of
         * a short write is never issued, and the caller is told it all went. */
        if (s->pos >= s->op.len || kind == ENG_IO_WRITE) s->state = RW_DONE;
#else
        if (s->pos >= s->op.len) s->state = RW_DONE;
#endif
    }
}

/* N bytes from S's position on are about to be handed to the OS. */
static void rw_sent(rw_state *s, size_t n) {
    if (s->pos + n > s->sent) s->sent = s->pos + n;
}

/* Bytes to ask for in the next transfer of S.  The short-I/O point halves
 * one transfer, as a kernel may: the loop must finish the range. */
static size_t rw_chunk(const rw_state *s) {
    size_t left = s->op.len - s->pos;
    size_t n = left < IO_MAX_XFER ? left : IO_MAX_XFER;
    if (n > 1 && ENG_FAULT(FP_IO_SHORT)) n /= 2;
    return n;
}

/* Run after() for S and fill REQ; returns REQ's status. */
static int rw_finish(io_ctx *io, int kind, rw_state *s, io_req *req) {
    assert(s->state != RW_PENDING); /* IO1: after() once, for a finished operation */
    if (s->state == RW_FAILED_BEFORE) {
        req->done = 0;
        return req->status = io_fail(io, s->err);
    }
    s->op.issued = s->sent;
    if (s->err)
        s->op.result = -(int64_t)s->err;
    else if (s->op.skip)
        s->op.result = (int64_t)s->want;
    else
        s->op.result = (int64_t)s->pos;
    req->status = hook_after(io, &s->op);
    if (req->status != ENG_OK)
        req->done = 0;
    else if (kind == ENG_IO_WRITE || s->op.skip)
        req->done = s->want; /* IO3 */
    else
        req->done = s->pos;
    return req->status;
}

/* pread/pwrite every pending state in S[0..m) to completion, in order. */
static void psync_issue(int kind, io_req *reqs, rw_state *s, size_t m, unsigned char *order) {
    for (size_t i = 0; i < m; i++) {
        order[i] = (unsigned char)i;
        int fd = reqs[i].f->fd;
        while (s[i].state == RW_PENDING) {
            char *p = (char *)s[i].op.buf + s[i].pos;
            off_t off = (off_t)(s[i].op.offset + s[i].pos);
            size_t want = rw_chunk(&s[i]);
            rw_sent(&s[i], want);
            ssize_t n = kind == ENG_IO_READ ? pread(fd, p, want, off) : pwrite(fd, p, want, off);
            rw_progress(kind, &s[i], n < 0 ? -(long)errno : (long)n);
        }
    }
}

/* Queue the next transfer of S[I] on R. */
static int ring_queue(io_ring *r, int kind, int fd, rw_state *s, size_t i) {
    int injected = ENG_FAULT(FP_URING_SUBMIT);
    if (injected) return -injected;
    struct io_uring_sqe *sqe = ring_sqe(r);
    if (!sqe) return -EBUSY;
    void *p = (char *)s[i].op.buf + s[i].pos;
    unsigned n = (unsigned)rw_chunk(&s[i]);
    uint64_t off = s[i].op.offset + s[i].pos;
    if (kind == ENG_IO_READ)
        io_uring_prep_read(sqe, fd, p, n, off);
    else
        io_uring_prep_write(sqe, fd, p, n, off);
    io_uring_sqe_set_data64(sqe, i);
    rw_sent(&s[i], n);
    return 0;
}

/* Submit every pending state in S[0..m) (m <= IO_RING_DEPTH) on one ring,
 * reap completions, resubmit the rest of short transfers.  ORDER gets the
 * indexes of all M states in the order they finished (IO2); states that
 * needed no I/O come first. */
static void ring_issue(io_ctx *io, int kind, io_req *reqs, rw_state *s, size_t m, unsigned char *order) {
    size_t nord = 0, inflight = 0;
    for (size_t i = 0; i < m; i++)
        if (s[i].state != RW_PENDING) order[nord++] = (unsigned char)i;
    if (nord == m) return; /* nothing to issue: do not even take a ring */

    io_ring *r = ring_acquire(io);
    int err = r->broken;
    for (size_t i = 0; i < m && !err; i++) {
        if (s[i].state != RW_PENDING) continue;
        int rc = ring_queue(r, kind, reqs[i].f->fd, s, i);
        if (rc < 0) {
            s[i].err = -rc;
            s[i].state = RW_DONE;
            order[nord++] = (unsigned char)i;
        } else {
            inflight++;
        }
    }
    while (inflight > 0 && !err) {
        struct io_uring_cqe *cqe;
        int rc = ring_next_cqe(r, &cqe);
        if (rc < 0) {
            err = -rc;
            break;
        }
        size_t i = (size_t)io_uring_cqe_get_data64(cqe);
        /* Our own tag: only this window's requests are in flight on a ring
         * held alone (a failed wait marks it broken, never used again). */
        assert(i < m && s[i].state == RW_PENDING);
        int res = cqe->res;
        int injected = ENG_FAULT(FP_URING_COMPLETE);
        if (injected) res = -injected; /* the transfer may have happened: as with EIO */
        io_uring_cqe_seen(&r->ring, cqe);
        inflight--;
        rw_progress(kind, &s[i], res);
        if (s[i].state == RW_PENDING) {
            rc = ring_queue(r, kind, reqs[i].f->fd, s, i);
            if (rc == 0) {
                inflight++;
                continue;
            }
#ifndef ENG_BROKEN_URING_REQUEUE_ERROR_DROPPED
            /* planted bug (tests/mutants.txt): the #ifndef leaves this out,
             * so the rest of a short transfer that io_uring would not take
             * ends the request with no error: a write is reported whole
             * (IO3) with its tail never issued, a read comes back short as
             * at end of file (psync, which has no submission to fail, is
             * not affected). */
            s[i].err = -rc;
#endif
            s[i].state = RW_DONE;
        }
        order[nord++] = (unsigned char)i;
    }
    if (err) {
        /* The ring failed (or had failed): whatever did not complete is
         * failed with its errno.  A broken ring is never used again, so no
         * stale queued request can be submitted later. */
        for (size_t i = 0; i < m; i++) {
            if (s[i].state == RW_PENDING) {
                s[i].err = err;
                s[i].state = RW_DONE;
                order[nord++] = (unsigned char)i;
            }
        }
    }
    assert(nord == m); /* IO2: every request of the window finished, each once in ORDER */
    ring_release(r);
}

/* Carry out N reads or writes, in windows of at most IO_RING_DEPTH: the
 * before()s of a window, its I/O, then its after()s in completion order
 * (IO2).  Returns the status of the lowest-index failing request, or
 * ENG_OK.  All state is on the stack: no allocation per call. */
static int rw_run(io_ctx *io, int kind, io_req *reqs, size_t n) {
    rw_state s[IO_RING_DEPTH];
    unsigned char order[IO_RING_DEPTH];
    int first = ENG_OK;

    for (size_t base = 0; base < n; base += IO_RING_DEPTH) {
        size_t m = n - base < IO_RING_DEPTH ? n - base : IO_RING_DEPTH;
        io_req *w = reqs + base;
        assert(m > 0 && m <= IO_RING_DEPTH); /* a window fits the state arrays and a ring */
        for (size_t i = 0; i < m; i++) rw_prepare(io, kind, &w[i], &s[i]);
        if (io->backend == ENG_IO_URING)
            ring_issue(io, kind, w, s, m, order);
        else
            psync_issue(kind, w, s, m, order);
        for (size_t k = 0; k < m; k++) rw_finish(io, kind, &s[order[k]], &w[order[k]]);
        if (first == ENG_OK)
            for (size_t i = 0; i < m; i++)
                if (w[i].status != ENG_OK) {
                    first = w[i].status;
                    break;
                }
    }
    return first;
}

/* R1 (io.h): after a read of F, wait out any fsync of F in flight; if one
 * failed, the bytes read may predate writes the kernel dropped. */
static int read_settle(io_file *f) {
#ifdef ENG_BROKEN_READ_CHECKS_FAILURE_BEFORE_WAIT
    /* planted bug (tests/mutants.txt): the failure flag is read before the
     * fsync in flight is waited out, so a read that completes while that
     * fsync fails returns the bytes it read instead of ENG_POISONED. */
    int failed = atomic_load_explicit(&f->sync_failed, memory_order_acquire);
    while (atomic_load_explicit(&f->syncs_active, memory_order_acquire) > 0) sched_yield();
    return failed ? ENG_POISONED : ENG_OK;
#else
    while (atomic_load_explicit(&f->syncs_active, memory_order_acquire) > 0) sched_yield();
#endif
#ifdef ENG_BROKEN_READ_IGNORES_FAILED_FSYNC
    /* planted bug (tests/mutants.txt): a failed fsync of the file is not
     * looked at, so a read may return contents the kernel dropped. */
    return ENG_OK;
#else
    return atomic_load_explicit(&f->sync_failed, memory_order_acquire) ? ENG_POISONED : ENG_OK;
#endif
}

int io_read(io_ctx *io, io_file *f, void *buf, size_t len, uint64_t offset, size_t *done) {
    io_req r = {.f = f, .buf = buf, .len = len, .offset = offset};
    int rc = rw_run(io, ENG_IO_READ, &r, 1);
    if (rc == ENG_OK) rc = read_settle(f);
    if (done) *done = r.done;
    return rc;
}

int io_write(io_ctx *io, io_file *f, const void *buf, size_t len, uint64_t offset) {
    /* The cast is the hook contract: a hook that wants to flip bits must
     * point op.buf at its own copy rather than write through this one. */
    io_req r = {.f = f, .buf = (void *)buf, .len = len, .offset = offset};
    return rw_run(io, ENG_IO_WRITE, &r, 1);
}

int io_write_batch(io_ctx *io, io_req *reqs, size_t n) { return rw_run(io, ENG_IO_WRITE, reqs, n); }

int io_read_batch(io_ctx *io, io_req *reqs, size_t n) {
    int rc = rw_run(io, ENG_IO_READ, reqs, n);
    for (size_t i = 0; i < n && rc == ENG_OK; i++) rc = read_settle(reqs[i].f);
    return rc;
}

/* ---- syncs --------------------------------------------------------------- */

/* fsync (or with DATA fdatasync) FD through the backend: 0 or -errno.
 * Never retried: after a failed fsync the kernel may have dropped the
 * dirty data, so a second success would prove nothing. */
static int backend_fsync(io_ctx *io, int fd, int data) {
    if (io->backend == ENG_IO_URING) return ring_fsync(io, fd, data ? IORING_FSYNC_DATASYNC : 0);
    return (data ? fdatasync(fd) : fsync(fd)) == 0 ? 0 : -errno;
}

/* What a sync of one file does: fsync, or fdatasync when DATA. */
typedef struct sync_arg {
    int fd;
    int data;
} sync_arg;

/* The kernel's answer, in place of the call: before() has run, so after()
 * sees the failure (and the journal the sync begin). */
static int do_sync(io_ctx *io, eng_io_op *op, void *arg) {
    (void)op;
    const sync_arg *a = arg;
    int injected = ENG_FAULT(FP_IO_FSYNC);
    if (injected) return -injected;
    return backend_fsync(io, a->fd, a->data);
}

/* One sync of F, counted for R1 (io.h): readers of F wait for it, and
 * learn whether it failed. */
static int file_sync(io_ctx *io, io_file *f, int data) {
    eng_io_op op = {.kind = ENG_IO_SYNC, .file_id = f->file_id, .path = f->path};
    sync_arg a = {.fd = f->fd, .data = data};
    atomic_fetch_add_explicit(&f->syncs_active, 1, memory_order_acq_rel);
    int rc = hooked_op(io, &op, do_sync, &a);
#ifdef ENG_BROKEN_FSYNC_RETRIED_AFTER_FAILURE
    /* planted bug (tests/mutants.txt): an fsync that failed with an I/O
     * error is tried once more, as for a transient error, and the second
     * answer is kept: the kernel reports a write-back error once, so the
     * retry says 0 though the dirty pages the first one failed on may be
     * gone (fsyncgate), and the caller takes them for durable (a commit
     * acknowledged, a checkpoint completed) with nothing poisoned. */
    if (rc == ENG_IOERR) {
        op = (eng_io_op){.kind = ENG_IO_SYNC, .file_id = f->file_id, .path = f->path};
        rc = hooked_op(io, &op, do_sync, &a);
    }
#endif
    if (rc != ENG_OK) /* before the count drops: R1's readers must see it */
        atomic_store_explicit(&f->sync_failed, 1, memory_order_release);
    else if (atomic_load_explicit(&f->sync_failed, memory_order_acquire))
        rc = ENG_POISONED; /* R2 (io.h): it proves nothing after a failed one */
    int was = atomic_fetch_sub_explicit(&f->syncs_active, 1, memory_order_acq_rel);
    assert(was > 0); /* R1's count of fsyncs in flight never goes negative */
    (void)was;
    return rc;
}

int io_sync(io_ctx *io, io_file *f) { return file_sync(io, f, 0); }

int io_datasync(io_ctx *io, io_file *f) { return file_sync(io, f, 1); }

static int do_dirsync(io_ctx *io, eng_io_op *op, void *arg) {
    (void)arg;
    int fd = open(op->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int rc = backend_fsync(io, fd, 0);
    close(fd);
    return rc;
}

int io_dirsync(io_ctx *io, const char *dir) {
    eng_io_op op = {.kind = ENG_IO_DIRSYNC, .file_id = -1, .path = dir};
    return hooked_op(io, &op, do_dirsync, NULL);
}

/* ---- files and metadata --------------------------------------------------- */

/* DIR/NAME into OUT (PATH_MAX-sized); ENG_INVALID if it does not fit. */
static int join_path(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= cap) ? ENG_INVALID : ENG_OK;
}

static int do_create(io_ctx *io, eng_io_op *op, void *arg) {
    (void)io;
    int *fd = arg; /* in: open flags; out: the descriptor */
    int flags = *fd;
    *fd = open(op->path, flags | O_CREAT | O_EXCL, 0644);
    if (*fd < 0 && errno == EEXIST) *fd = open(op->path, flags); /* created meanwhile by someone else */
    return *fd < 0 ? -errno : 0;
}

/* The plain open comes first because it is the common case (the file
 * exists) and costs one syscall; only a missing file goes through the
 * hooked create.  A hook that skips the create leaves the file missing, so
 * the open fails with ENOENT: a skipped create is not a created file. */
int io_open(io_ctx *io, const char *dir, const char *name, int file_id, int create, int read_only, io_file *f) {
    f->fd = -1;
    f->file_id = file_id;
    atomic_init(&f->syncs_active, 0);
    atomic_init(&f->sync_failed, 0);
    if (strlen(name) >= sizeof f->name) return ENG_INVALID;
    strcpy(f->name, name);
    if (join_path(f->path, sizeof f->path, dir, name) != ENG_OK) return ENG_INVALID;

    int flags = (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
    int fd = open(f->path, flags);
    if (fd >= 0) {
        f->fd = fd;
        return ENG_OK;
    }
    if (errno != ENOENT || !create) return io_fail(io, errno);

    eng_io_op op = {.kind = ENG_IO_CREATE, .file_id = file_id, .path = f->path};
    fd = flags;
    int rc = hook_before(io, &op);
    if (rc < 0) return io_fail(io, rc);
    if (op.skip) {
        op.result = 0;
        fd = -1;
    } else {
        op.result = do_create(io, &op, &fd);
    }
    rc = hook_after(io, &op);
    if (rc != ENG_OK) {
        if (fd >= 0) close(fd);
        return rc;
    }
    if (fd < 0) return io_fail(io, ENOENT);
    f->fd = fd;
    return ENG_OK;
}

void io_close(io_ctx *io, io_file *f) {
    (void)io;
    if (f->fd >= 0) close(f->fd); /* errors of close carry nothing: data is synced or not by fsync */
    f->fd = -1;
}

int io_size(io_ctx *io, io_file *f, uint64_t *size) {
    struct stat st;
    if (fstat(f->fd, &st) != 0) return io_fail(io, errno);
    *size = (uint64_t)st.st_size;
    return ENG_OK;
}

static int do_truncate(io_ctx *io, eng_io_op *op, void *arg) {
    (void)io;
    int fd = *(int *)arg;
    int rc;
    do rc = ftruncate(fd, (off_t)op->offset);
    while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : -errno;
}

int io_truncate(io_ctx *io, io_file *f, uint64_t size) {
    eng_io_op op = {.kind = ENG_IO_TRUNCATE, .file_id = f->file_id, .path = f->path, .offset = size};
    /* Only buf, offset and len of reads and writes are mutable: the size
     * is restored after the hook so truncate does what the caller asked. */
    int rc = hook_before(io, &op);
    if (rc < 0) return io_fail(io, rc);
    op.offset = size;
    op.result = op.skip ? 0 : do_truncate(io, &op, &f->fd);
    return hook_after(io, &op);
}

static int do_rename(io_ctx *io, eng_io_op *op, void *arg) {
    (void)io;
    (void)arg;
    return rename(op->path, op->path2) == 0 ? 0 : -errno;
}

int io_rename(io_ctx *io, const char *dir, const char *from, const char *to) {
    char a[4096], b[4096];
    if (join_path(a, sizeof a, dir, from) != ENG_OK || join_path(b, sizeof b, dir, to) != ENG_OK) return ENG_INVALID;
    eng_io_op op = {.kind = ENG_IO_RENAME, .file_id = -1, .path = a, .path2 = b};
    return hooked_op(io, &op, do_rename, NULL);
}

static int do_unlink(io_ctx *io, eng_io_op *op, void *arg) {
    (void)io;
    (void)arg;
    return unlink(op->path) == 0 ? 0 : -errno;
}

int io_unlink(io_ctx *io, const char *dir, const char *name) {
    char a[4096];
    if (join_path(a, sizeof a, dir, name) != ENG_OK) return ENG_INVALID;
    eng_io_op op = {.kind = ENG_IO_UNLINK, .file_id = -1, .path = a};
    int rc = hooked_op(io, &op, do_unlink, NULL);
    /* Told apart from a failure: callers that clear leftovers ignore only
     * this (an unlink that failed with EIO may have left the file). */
    if (rc != ENG_OK && op.result == -ENOENT) return ENG_NOTFOUND;
    return rc;
}

/* ---- context ----------------------------------------------------------- */

/* On ENG_NOTSUP (io_uring_queue_init refused: old kernel, seccomp,
 * io_uring_disabled, RLIMIT_MEMLOCK) errno holds the kernel's reason, for
 * the caller's message.  There is no silent fallback to psync: a run that
 * asked for io_uring must not quietly test something else. */
int io_ctx_create(int backend, const eng_io_hooks *hooks, io_ctx **out) {
    *out = NULL;
    if (backend != ENG_IO_URING && backend != ENG_IO_PSYNC) return ENG_INVALID;
    io_ctx *io = calloc(1, sizeof *io);
    if (!io) return ENG_NOMEM;
    io->backend = backend;
    io->hooks = hooks;
    atomic_init(&io->last_errno, 0);
    atomic_init(&io->next_ring, 0);
    if (backend == ENG_IO_URING) {
        for (int i = 0; i < IO_NRINGS; i++) {
            int rc = io_uring_queue_init(IO_RING_DEPTH, &io->rings[i].ring, 0);
            if (rc < 0) {
                io_ctx_destroy(io);
                errno = -rc;
                return ENG_NOTSUP;
            }
            pthread_mutex_init(&io->rings[i].mu, NULL);
            io->nrings = i + 1;
        }
    }
    *out = io;
    return ENG_OK;
}

void io_ctx_destroy(io_ctx *io) {
    if (!io) return;
    for (int i = 0; i < io->nrings; i++) {
        io_uring_queue_exit(&io->rings[i].ring);
        pthread_mutex_destroy(&io->rings[i].mu);
    }
    free(io);
}

int io_backend(const io_ctx *io) { return io->backend; }
