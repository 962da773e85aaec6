/*
 * door.h -- the fault door at the POSIX boundary: the fault library's I/O
 * hooks (eng_io_hooks: the injectors of inject.c, the ledger, the
 * power-loss journal) fed from the file calls of an engine that has no
 * hooks of its own (RocksDB, SQLite), or of ours run with
 * io_backend=psync.
 *
 * How: door.c defines the libc file calls below in the executable that
 * links it.  Symbols the main executable defines come first in the
 * dynamic linker's lookup, so they stand in for libc's also for the calls
 * of shared libraries (librocksdb.so, libsqlite3.so), as an LD_PRELOAD
 * library would; libc's own functions are reached through
 * dlsym(RTLD_NEXT, ...), resolved once.  Any executable linking
 * libfaults.a gets door.o (it defines open, read, ...: the linker takes it
 * to satisfy those); disarmed, a call costs one relaxed atomic load more
 * than libc's.
 *
 * Interposed (with their 64-bit and _FORTIFY_SOURCE names: open64,
 * __open_2, __read_chk, __pread64_chk ...):
 *   open, openat, creat          CREATE when O_CREAT makes the file;
 *                                TRUNCATE (to 0) when O_TRUNC empties one
 *   close, dup, dup2, dup3       the descriptor table
 *   read, pread, readv, preadv   READ
 *   write, pwrite, writev, pwritev WRITE
 *   fsync, fdatasync             SYNC of a file, DIRSYNC of a directory
 *   ftruncate, truncate          TRUNCATE
 *   fallocate, posix_fallocate   TRUNCATE when it grows the file (mode 0);
 *                                a WRITE of zeros for PUNCH_HOLE and
 *                                ZERO_RANGE (up to 64 MiB)
 *   rename, renameat, renameat2  RENAME (both names in the directory)
 *   unlink, unlinkat             UNLINK
 *   link, linkat                 CREATE of the new name
 *
 * Not seen, so neither hooked nor journaled:
 *   - what goes through a mapping: a file changed through mmap (RocksDB's
 *     mmap writes, SQLite's mmap_size and its -shm WAL index) changes with
 *     no call the door sees, and msync is not interposed;
 *   - glibc's own internal calls: stdio (fopen, fwrite, fflush, fclose),
 *     posix_spawn, nftw ... call libc's internal symbols, not these;
 *   - io_uring (our engine's default backend: run it with psync),
 *     preadv2/pwritev2, copy_file_range, sendfile, splice, raw syscall();
 *   - mkdir and rmdir (unlinkat with AT_REMOVEDIR): eng_io_kind has no
 *     kind for a directory's creation, and the power-loss step undoes a
 *     create with unlink, which cannot remove a directory;
 *   - sync_file_range: no durability point (it writes neither metadata nor
 *     the device's cache), so it must not count as a sync in the journal;
 *   - renameat2 with RENAME_EXCHANGE, a rename into or out of the
 *     directory, O_TMPFILE, fallocate's COLLAPSE/INSERT/UNSHARE ranges:
 *     nothing the journal could undo;
 *   - a descriptor made by fcntl(F_DUPFD), and descriptors past 2^20;
 *   - a library dlopen'ed with RTLD_DEEPBIND (it finds libc's first).
 *
 * Which files: those under the directory flt_door_arm was given, by path
 * (textual under its spelling or its realpath, else the realpath of the
 * file's parent), relative paths resolved against the working directory
 * or the openat descriptor.  Each such descriptor is in a table fd ->
 * (path relative to the directory, file_id); every other descriptor passes
 * straight to libc.  A descriptor is checked (fstat: device and inode) at
 * each translated call, so one closed behind the door's back (fclose) and
 * reused for another file is never taken for the old one.
 *
 * Each call on a database file becomes one eng_io_op: op->path is the
 * directory as armed (its realpath if that was relative) + "/" + the
 * relative path, so the journal and the ledger name it relative to the
 * database directory when flt_open got the same spelling; path2 for a
 * rename; file_id is the path's own small id, from 1 up in the order the
 * door first met the names (0, which inject.c takes for the engine's data
 * file, is never given: with flt_options.via_door inject.c tells the data
 * file by its name, "data"; -1 for directories).  Then, as engine/io.c does:
 * before() (a negative errno fails the call with -1 and errno, nothing
 * issued, no after(); skip reports it done; a write's buf, offset and len
 * may be replaced, len only shortened into the caller's buffer), the real
 * call, after() with result (bytes or -errno) and issued.  A write a hook
 * shortened (torn) or skipped (lost) is reported to the caller as
 * complete (IO3 of engine/io.c), unless the hook marked the cut a short
 * transfer (short_count 2: a read or write call returns the bytes moved,
 * as a kernel may; the door offers it with short_count 1).
 *
 * Offsets: read, write, readv and writev use and advance the
 * descriptor's offset (lseek(fd, 0, SEEK_CUR) first; the file's size on an
 * O_APPEND descriptor, which fcntl(F_GETFL) reads at each call), under a
 * lock per file, so concurrent unpositioned calls on one file cannot
 * interleave between the journal's read of the old bytes and the write.
 * Vectored calls are gathered into one page-aligned buffer (O_DIRECT
 * descriptors accept it) and made one op (and one write(2) of it): a
 * vectored write stays one write in the journal, kept or rolled back
 * whole, as the kernel would keep the order of its bytes.
 *
 * Re-entrancy: while the door runs the hooks, the calling thread's file
 * calls pass straight through (a thread-local flag), so the fault
 * library's own I/O on the database's files (the journal's reads of old
 * bytes, a failed fsync's rollback of dirty data) is never taken for the
 * engine's.  Its I/O outside the hooks (flt_tick's flips on disk, the
 * flips before a kill point's SIGKILL) must be bracketed with
 * flt_door_bypass.
 */
#ifndef FAULTS_DOOR_H
#define FAULTS_DOOR_H

#include <stdint.h>

#include "engine.h"

/* Start translating the file calls on paths under DB_DIR (an existing
 * directory) into operations for HOOKS (flt_hooks(f): must stay valid
 * until flt_door_disarm).  Descriptors opened before this call are not
 * known to the door: arm it before the engine opens its files.  Returns
 * 0, -EBUSY when already armed, -EINVAL, or -errno of realpath(DB_DIR). */
int flt_door_arm(const eng_io_hooks *hooks, const char *db_dir);

/* Stop translating: waits until no thread is inside a translated call,
 * then forgets every descriptor and path.  Safe to call when disarmed. */
void flt_door_disarm(void);

/* ON = 1: the calling thread's file calls pass straight to libc until the
 * matching flt_door_bypass(0) (nests).  For the fault library's own I/O on
 * the database's files made outside the hooks, which must be neither
 * hooked nor journaled as the engine's. */
void flt_door_bypass(int on);

/* Operations the door has handed to the hooks since the process started
 * (each before() counted once, failed or not). */
uint64_t flt_door_ops(void);

#endif
