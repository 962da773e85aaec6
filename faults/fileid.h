/*
 * fileid.h -- what the door and the fault library ask of an open file on
 * every call: its identity (device, inode, type) or its size, without
 * asking for its times.
 *
 * fstat and stat ask for every field.  Since Linux 6.13 a file system
 * with multigrain timestamps (ext4, xfs, btrfs, tmpfs) marks an inode
 * whose ctime or mtime was read, and the next write then takes a
 * fine-grained timestamp: every write changes the inode instead of one
 * write per clock tick, and an fdatasync after it also writes the inode
 * (perf: ext4_write_inode under ext4_sync_file).  A stat before each
 * write, as the door's descriptor check made, nearly doubled the cost of
 * a synced write.  statx with a mask that leaves the times out reads
 * nothing of them.
 *
 * Header-only: the door includes no other file of the library.
 */
#ifndef FAULTS_FILEID_H
#define FAULTS_FILEID_H

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* FD's device, inode and file type (S_IFMT bits) into the pointers.
 * Returns 0, or -1 with errno set. */
static inline int flt_fd_ident(int fd, uint64_t *dev, uint64_t *ino, unsigned *type) {
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO, &sx) != 0) return -1;
    *dev = (uint64_t)makedev(sx.stx_dev_major, sx.stx_dev_minor);
    *ino = (uint64_t)sx.stx_ino;
    *type = (unsigned)sx.stx_mode & S_IFMT;
    return 0;
}

/* The size of the file at PATH relative to DIRFD (PATH "" and
 * AT_EMPTY_PATH in FLAGS: the descriptor DIRFD itself) into *SIZE.
 * Returns 0, or -1 with errno set. */
static inline int flt_size_at(int dirfd, const char *path, int flags, uint64_t *size) {
    struct statx sx;
    if (statx(dirfd, path, flags | AT_STATX_SYNC_AS_STAT, STATX_SIZE, &sx) != 0) return -1;
    *size = (uint64_t)sx.stx_size;
    return 0;
}

#endif
