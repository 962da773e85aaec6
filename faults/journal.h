/*
 * journal.h -- the crash-simulation journal (DESIGN 4, "Crash simulation").
 *
 * Through the engine's I/O hooks, the fault library records, before each
 * write, the old contents of the range it will overwrite, and every
 * metadata operation, in an append-only file (RUN_DIR/journal) that
 * survives SIGKILL (plain write(2): the page cache keeps it).  Completion
 * markers are appended from the after() hook, so the journal orders each
 * write's completion relative to each sync's start: a write is covered by
 * a sync of its file only if it completed before that sync began (with
 * io_uring, a sync covers only writes already completed).  Directory
 * entries (create, rename, unlink) are durable only after an fsync of
 * their directory; a truncate, after an fsync of the file.
 *
 * After a crash, build/powerloss (powerloss.c) reads the journal and puts
 * the database directory into a state a power cut could have left: any
 * subset of the unsynced writes rolled back, or torn at 512-byte sector
 * granularity, and unsynced creations, renames, unlinks and truncates
 * undone.  Synced data is never touched.
 */
#ifndef FAULTS_JOURNAL_H
#define FAULTS_JOURNAL_H

#include "engine.h"

typedef struct flt_journal flt_journal;

/* Open RUN_DIR/journal for appending (created if missing).  DB_DIR is the
 * database directory whose files the hooks will see (paths are journaled
 * relative to it).  Files that must be kept to undo an unlink or a
 * replaced rename target are hard-linked into RUN_DIR/journal.d/.
 * Returns 0 or -errno. */
int flt_journal_open(const char *run_dir, const char *db_dir, flt_journal **out);
void flt_journal_close(flt_journal *j);

/* Call from the I/O hooks, for every operation, in this order:
 * flt_journal_before(op) right before the operation is issued (after any
 * fault hook has decided its final offset, len and skip), and
 * flt_journal_after(op) right after it completes.  Thread-safe.
 * Returns 0 or -errno (the caller should then fail the operation: a write
 * whose old contents could not be saved must not happen). */
int flt_journal_before(flt_journal *j, const eng_io_op *op);
void flt_journal_after(flt_journal *j, const eng_io_op *op);

/* Forget everything journaled so far (a clean shutdown made it all
 * durable): truncates the journal.  Returns 0 or -errno. */
int flt_journal_reset(flt_journal *j);

#endif
