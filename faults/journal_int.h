/*
 * journal_int.h -- the byte layout of RUN_DIR/journal, shared by the
 * writer (journal.c) and the reader (powerloss.c).  Not for other users:
 * the contract of the journal is journal.h.
 *
 * The journal is a sequence of records, each appended with one write(2)
 * on an O_APPEND descriptor.  All integers are little-endian.
 *
 *      0       4    5    6         8        12       16               24               32
 *      +-------+----+----+---------+--------+--------+----------------+----------------+---------
 *      | magic |kind|ver | flags=0 |  len   | rsvd=0 |       id       |      sum       | payload
 *      +-------+----+----+---------+--------+--------+----------------+----------------+---------
 *       jr_magic "JRNL" (0x4C4E524A)   jr_len: payload bytes
 *       jr_id: a BEGIN's (or SESSION's) own id; a DONE's: the id of its BEGIN
 *       jr_sum: XXH3-64 of the payload, seeded with the XXH3-64 of bytes [0, 24)
 *
 * Payloads ("str" is a u16 length and that many bytes, no NUL; paths are
 * relative to the database directory, "." for the directory itself):
 *
 *   SESSION     u64 session, u64 pid, u64 unix time (ns), str db_dir
 *   WRITE_B     u64 offset, u64 len, u64 old_size, str path, old bytes
 *               old_size is the file size before the write, clamped to
 *               offset+len (a write ending inside the file has
 *               old_size == offset+len); the old bytes are those of
 *               [offset, max(offset, old_size)): what lies beyond old_size
 *               did not exist and is undone by truncation.
 *   SYNC_B      str path
 *   CREATE_B    str path
 *   RENAME_B    str from, str to, str saved  (saved: name in journal.d/ of
 *               a hard link to the replaced target; "" = no target)
 *   UNLINK_B    str path, str saved          (saved "" = nothing to unlink)
 *   TRUNCATE_B  u64 old_size, u64 new_size, str path, old bytes of
 *               [new_size, old_size) when the truncate shrinks the file
 *   DIRSYNC_B   str dir
 *   DONE        i64 result (bytes transferred, 0, or -errno)
 *
 * A record whose header or checksum does not verify ends its session: a
 * SIGKILL during an append leaves at most the last record torn (appends
 * are serialized by the kernel and the dying process writes nothing after
 * the first one cut short).  A restarted process appends a SESSION record
 * right after such torn bytes, and the reader resumes there.  Ids are
 * unique within a session; DONEs match BEGINs of their own session.
 */
#ifndef FAULTS_JOURNAL_INT_H
#define FAULTS_JOURNAL_INT_H

#include <stddef.h>
#include <stdint.h>

#define JR_MAGIC 0x4C4E524Au
#define JR_VERSION 1u
#define JR_HDR 32u
#define JR_SUM_OFF 24u

enum jr_kind {
    JR_SESSION = 1,
    JR_WRITE_B,
    JR_SYNC_B,
    JR_CREATE_B,
    JR_RENAME_B,
    JR_UNLINK_B,
    JR_TRUNCATE_B,
    JR_DIRSYNC_B,
    JR_DONE,
    JR_KIND_END
};

/* The journal file and the directory of saved files, inside RUN_DIR. */
#define JR_FILE "journal"
#define JR_SAVED_DIR "journal.d"

/* A string field as it sits in a record (not NUL-terminated). */
typedef struct jr_str {
    const char *p;
    uint16_t len;
} jr_str;

/* One decoded record; pointers point into the caller's buffer. */
typedef struct jr_rec {
    int kind;
    uint64_t id;
    uint64_t pos;           /* byte offset of the record in the journal */
    uint64_t offset, len;   /* WRITE_B */
    uint64_t old_size;      /* WRITE_B, TRUNCATE_B */
    uint64_t new_size;      /* TRUNCATE_B */
    int64_t result;         /* DONE */
    uint64_t session, pid, time_ns; /* SESSION */
    jr_str path, path2, saved; /* path2: RENAME_B target; saved: RENAME_B, UNLINK_B */
    const uint8_t *old;     /* WRITE_B, TRUNCATE_B: old bytes */
    uint64_t old_len;
} jr_rec;

/* Decode the record at BUF[0..AVAIL).  Returns its total length (header +
 * payload) and fills *R, or 0 if no whole valid record starts there (a
 * torn or damaged tail). */
size_t flt_jr_decode(const uint8_t *buf, size_t avail, jr_rec *r);

#endif
