/*
 * faultpoints.h -- the catalogue of the engine's named fault points: the
 * one place that lists them (stress --list_fault_points prints it).
 *
 * Points are libfiu points (fiu_fail), compiled in only when the engine is
 * built with -DFIU_ENABLE (build/libengine-fiu.a); the plain build has
 * none.  Even compiled in, a point costs one relaxed load of the engine's
 * armed flag until eng_faults_arm(1): libfiu's fiu_fail takes a global
 * lock and a hash lookup on every call, enabled or not.  Points sit on I/O
 * and commit paths only, never on in-memory hot paths.
 *
 * Three kinds:
 *   engine/...  an I/O or log failure: when the point fires, the operation
 *               fails with errno = the failnum it was enabled with (EIO,
 *               ENOSPC ...), before it is issued, as the kernel would say it
 *               (engine/io/fsync in the sync call itself, after the I/O
 *               hooks' before(): their after() sees the failure, so a fault
 *               library can drop the file's dirty data as Linux may)
 *   kill/...    a crash site: the point only asks; the fault library's
 *               callback ends the process (SIGKILL) when it decides to
 *   delay/...   a timing site between two steps another thread may race
 *               with: the point only asks, never fails; the fault
 *               library's callback may sleep or yield there before it
 *               returns, so a window of a few instructions opens for
 *               milliseconds (FoundationDB's BUGGIFY).  Each sits where a
 *               step is done and the next not yet begun: the engine must
 *               be right whatever happens in between.
 * libfiu tells an external callback the enabled name, not the point that
 * fired, so points are enabled by exact name when the decision depends on
 * the point.
 */
#ifndef ENGINE_FAULTPOINTS_H
#define ENGINE_FAULTPOINTS_H

typedef struct eng_fault_point {
    const char *name;
    const char *what;
} eng_fault_point;

#define ENG_FAULT_POINTS(X)                                                                                            \
    X(FP_IO_READ, "engine/io/read", "a read (pread or io_uring read submission) fails")                                \
    X(FP_IO_WRITE, "engine/io/write", "a write fails before it is issued")                                             \
    X(FP_IO_FSYNC, "engine/io/fsync",                                                                                  \
      "an fsync of a file fails in the sync call, after the hooks saw it begin (the kernel may drop its dirty pages)") \
    X(FP_IO_SHORT, "engine/io/short", "one read or write syscall transfers only part of its range")                    \
    X(FP_IO_META, "engine/io/meta", "create, rename, unlink, truncate or directory fsync fails")                       \
    X(FP_URING_SUBMIT, "engine/io/uring/submit", "io_uring submission fails")                                          \
    X(FP_URING_COMPLETE, "engine/io/uring/complete", "an io_uring completion reports an error")                        \
    X(FP_WAL_APPEND, "engine/wal/append", "appending a record to the log buffer fails")                                \
    X(FP_CKPT_CONTROL, "engine/checkpoint/control", "writing the control file at a checkpoint fails")                  \
    X(FP_KILL_WAL_WRITE_SYNC, "kill/wal/after_write_before_sync",                                                      \
      "crash after log blocks are written, before their fsync")                                                        \
    X(FP_KILL_WAL_SYNC, "kill/wal/after_sync", "crash after a log fsync, before the waiters are told")                 \
    X(FP_KILL_COMMIT, "kill/commit/after_batch_record",                                                                \
      "crash after a batch record is appended, before its pages change")                                               \
    X(FP_KILL_OP, "kill/commit/between_ops", "crash between two operations of one batch")                              \
    X(FP_KILL_PAGE_WRITE, "kill/page/mid_write_back", "crash in the middle of a batch of page write-backs")            \
    X(FP_KILL_CKPT_DATA, "kill/checkpoint/after_data_before_control",                                                  \
      "crash after a checkpoint's pages are synced, before control")                                                   \
    X(FP_KILL_CKPT_RECORD, "kill/checkpoint/after_record",                                                             \
      "crash after the checkpoint record, before control is replaced")                                                 \
    X(FP_KILL_CONTROL, "kill/control/after_temp_before_rename", "crash with control.tmp written, before the rename")   \
    X(FP_KILL_RECOVERY_REDO, "kill/recovery/mid_redo", "crash in the middle of redo")                                  \
    X(FP_KILL_RECOVERY_END, "kill/recovery/before_end_checkpoint",                                                     \
      "crash after redo, before the end-of-recovery checkpoint")                                                       \
    X(FP_DELAY_WAL_BEFORE_SYNC, "delay/wal/before_sync",                                                               \
      "a pause after log blocks are written, before their fsync (appenders go on)")                                    \
    X(FP_DELAY_WAL_BEFORE_PUBLISH, "delay/wal/before_publish",                                                         \
      "a pause after a log fsync, before its position is published as durable")                                        \
    X(FP_DELAY_COMMIT_BEFORE_PUBLISH, "delay/commit/before_publish",                                                   \
      "a pause after a batch's pages and commit-log entry changed, before readers are told it committed")              \
    X(FP_DELAY_CKPT_AFTER_REDO, "delay/checkpoint/after_redo_point",                                                   \
      "a pause after a checkpoint chose its redo point, before it flushes the pool (writers go on)")                   \
    X(FP_DELAY_CKPT_BEFORE_CONTROL, "delay/checkpoint/before_control",                                                 \
      "a pause after the checkpoint record is durable, before control names it")                                       \
    X(FP_DELAY_WRITEBACK_BEFORE_WRITE, "delay/bufpool/before_write_back",                                              \
      "a pause with write-back copies made and the log flushed, before the pages are written")                         \
    X(FP_DELAY_WRITEBACK_BEFORE_RELEASE, "delay/bufpool/before_latch_release",                                         \
      "a pause after a write-back completed, before its frames are settled and their latches released")                \
    X(FP_DELAY_PAGE_BEFORE_LATCH, "delay/bufpool/before_page_latch",                                                   \
      "a pause before a page is looked up and latched (a descent between two levels, a reader before its leaf)")       \
    X(FP_DELAY_PAGE_AFTER_RELEASE, "delay/bufpool/after_page_release",                                                 \
      "a pause after a page's latch is released, before the thread's next step (others may change the page)")

enum eng_fault_point_id {
#define FP_ENUM(id, name, what) id,
    ENG_FAULT_POINTS(FP_ENUM)
#undef FP_ENUM
        FP_COUNT
};

/* The catalogue, in enum order (engine.c). */
extern const eng_fault_point eng_fault_points[FP_COUNT];

#ifdef FIU_ENABLE
#include <fiu.h>
#include <stdatomic.h>
extern _Atomic int eng_faults_armed_flag;
/* errno to inject (the point's failnum), or 0. */
#define ENG_FAULT(id) \
    (atomic_load_explicit(&eng_faults_armed_flag, memory_order_relaxed) ? fiu_fail(eng_fault_points[id].name) : 0)
#else
#define ENG_FAULT(id) ((void)(id), 0)
#endif

/* A crash site: the fault library's callback kills the process. */
#define ENG_KILL_POINT(id) ((void)ENG_FAULT(id))
/* A timing site: the fault library's callback may pause the thread. */
#define ENG_DELAY_POINT(id) ((void)ENG_FAULT(id))

#endif
