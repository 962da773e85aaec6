/*
 * journal.h -- the crash-simulation journal (docs/fault-classes.md, Crash:
 * power loss and kill).
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
 *
 * While the process runs, an injected fsync failure (class sync_error)
 * uses the journal to drop the file's dirty data as Linux may
 * (flt_journal_drop_unsynced): the same rule says which writes were not
 * durable, they are rolled back on disk at once, and the journal records
 * the drop so that a later power-loss step neither keeps nor undoes them.
 */
#ifndef FAULTS_JOURNAL_H
#define FAULTS_JOURNAL_H

#include <stdint.h>

#include "engine.h"
#include "ledger.h"

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

/* Drop the dirty data of the file at PATH whose fsync just failed (an
 * injected sync_error), as Linux may: every write to that file (the inode
 * PATH names now, followed through renames) that this session journaled,
 * that completed, and that no successful fsync of the file covers (it did
 * not complete before such an fsync began: the power-loss step's rule) is
 * rolled back to its old contents on disk, newest first, now.  A later
 * read sees the old data, as after the kernel dropped the pages it could
 * not write back.  (Linux may also keep the new data in the page cache,
 * marked clean; rollback is the harsher case, and the one a power cut
 * would show anyway, so it is the one modelled.)
 *
 * For each write, in this order: a ledger line (TMPL with file = PATH
 * relative to the database directory, offset and len of the write, a
 * note; TMPL NULL: class "sync_error", point "sync/drop_dirty"), a DROP
 * record in the journal, then the old bytes (a write that extended the
 * file is undone by truncating back).  Ranges that later changes of the
 * file decided are left alone: a truncate, and a write still in flight
 * (journaled but not done), whose I/O may be running.  Writes of earlier
 * sessions (a process that crashed before this one) are not dropped.
 * Such a truncate's saved tail and such a write's old bytes were read
 * before the drop, so a power-loss step that later undoes them puts back
 * what they saw then, dropped data included: a state Linux can leave too
 * (pages it drops after a write-back error may or may not have reached
 * the disk), and one the engine must not depend on either way.
 *
 * Call it before failing the fsync, from any thread; no operation is
 * journaled (before() waits) until it returns.  *NDROPPED (may be NULL)
 * gets the number of ledger lines written, also when it fails half way.
 * Returns 0 (also when PATH is outside the database directory or nothing
 * was unsynced) or -errno: the journal is broken (J3: -EIO), the ledger or
 * the journal could not be appended to (the write in hand was then not
 * rolled back), or the file could not be restored (the journal already
 * says dropped: a power-loss step keeps what is on disk, a state a power
 * cut may leave too).  Cost: one pass over this session's journal. */
int flt_journal_drop_unsynced(flt_journal *j, const char *path, flt_ledger *ledger, const flt_event *tmpl,
                              uint64_t *ndropped);

/* Forget everything journaled so far (a clean shutdown made it all
 * durable): truncates the journal.  Returns 0 or -errno. */
int flt_journal_reset(flt_journal *j);

#endif
