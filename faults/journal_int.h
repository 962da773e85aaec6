/*
 * journal_int.h -- the byte layout of RUN_DIR/journal, and the reader and
 * analysis of what it holds (journal_read.c), shared by the writer
 * (journal.c, which also reads it back to drop the unsynced writes of a
 * file whose fsync failed) and the power-loss step (powerloss.c).  Not for other users: the contract of the
 * journal is journal.h.
 *
 * The journal is a sequence of records, each appended with one write(2)
 * on an O_APPEND descriptor.  All integers are little-endian.
 *
 *      0       4    5    6         8        12       16               24               32
 *      +-------+----+----+---------+--------+--------+----------------+----------------+---------
 *      | magic |kind|ver | flags=0 |  len   | rsvd=0 |       id       |      sum       | payload
 *      +-------+----+----+---------+--------+--------+----------------+----------------+---------
 *       jr_magic "JRNL" (0x4C4E524A)   jr_len: payload bytes
 *       jr_id: a BEGIN's (or SESSION's) own id; a DONE's or DROP's: the id
 *              of its BEGIN
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
 *   DROP        u64 offset, u64 len, str path (those of the WRITE_B it
 *               names): that completed, unsynced write was rolled back on
 *               disk by an injected fsync failure (flt_journal_drop_unsynced)
 *               right after this record was appended.  Its bytes are the
 *               old ones again and later records were made on top of that,
 *               so the power-loss step neither keeps nor undoes it.
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

#define JR_MAGIC   0x4C4E524Au
#define JR_VERSION 1u
#define JR_HDR     32u
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
    JR_DROP,
    JR_KIND_END
};

/* The journal file and the directory of saved files, inside RUN_DIR. */
#define JR_FILE      "journal"
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
    uint64_t pos;                   /* byte offset of the record in what was decoded
                             * (the journal, or one session of it) */
    uint64_t offset, len;           /* WRITE_B, DROP */
    uint64_t old_size;              /* WRITE_B, TRUNCATE_B */
    uint64_t new_size;              /* TRUNCATE_B */
    int64_t result;                 /* DONE */
    uint64_t session, pid, time_ns; /* SESSION */
    jr_str path, path2, saved;      /* path2: RENAME_B target; saved: RENAME_B, UNLINK_B;
                                * path: also SESSION (db_dir) and DROP */
    const uint8_t *old;             /* WRITE_B, TRUNCATE_B: old bytes */
    uint64_t old_len;
} jr_rec;

/* u64 -> u64 map: open addressing, linear probing, grows at load 1/2,
 * backward-shift deletion.  Key 0 = empty, so callers must never store 0
 * (offset keys that can be 0).  Used for the in-flight table (op pointer
 * -> id of its BEGIN) and the id map of flt_jr_durability (id + 1 -> op
 * index). */
typedef struct jr_u64map {
    uint64_t *key;
    uint64_t *val;
    size_t cap, n;
} jr_u64map;

int flt_jr_um_put(jr_u64map *m, uint64_t k, uint64_t v);        /* insert or replace K (nonzero) */
int flt_jr_um_get(const jr_u64map *m, uint64_t k, uint64_t *v); /* 1 and *V if K is there */
int flt_jr_um_take(jr_u64map *m, uint64_t k, uint64_t *v);      /* remove K: 1 and *V if it was there */
void flt_jr_um_clear(jr_u64map *m);                             /* empty it, keeping its storage */
void flt_jr_um_free(jr_u64map *m);

/* The record checksum (jr_sum): the payload hashed with the XXH3-64 of
 * the header's first 24 bytes as seed (no streaming state needed). */
uint64_t flt_jr_sum(const uint8_t *hdr, const uint8_t *payload, size_t len);

/* Decode the record at BUF[0..AVAIL).  Returns its total length (header +
 * payload) and fills *R, or 0 if no whole valid record starts there (a
 * torn or damaged tail). */
size_t flt_jr_decode(const uint8_t *buf, size_t avail, jr_rec *r);

/* ---- the analysis (journal_read.c; used by powerloss.c and the fsync-failure
 * drop of journal.h) --------------------------------------------------------
 *
 * Step 1 of the power-loss step, "what was durable", lives here so that
 * the drop of a failed fsync and a later power loss apply one rule:
 *
 *   - A write or truncate is durable iff its DONE precedes the BEGIN of a
 *     SYNC of the same inode whose DONE reports success.  Inodes are
 *     followed through renames (a sync of "control" after renaming
 *     "control.tmp" onto it covers the writes made as "control.tmp").
 *   - A create, rename or unlink is durable iff it succeeded and a
 *     DIRSYNC of its parent directory (both parents for a rename) began
 *     after its DONE and succeeded.
 *   - A write that a DROP names is dropped: rolled back already, so
 *     neither kept nor undone again, whatever came after it.
 *
 * Every function returns 0 or a negative errno (-ENOMEM; -EBADMSG for a
 * journal damaged in the middle; the errno of a failed file operation);
 * nothing here exits or prints. */

/* String map (names -> small ints >= 0; -1 reads as "absent"). */
typedef struct jr_strmap {
    char **key;
    int *val;
    size_t cap, n;
} jr_strmap;

int flt_jr_sm_get(const jr_strmap *m, const char *k, size_t len); /* value, or -1 */
int flt_jr_sm_set(jr_strmap *m, const char *k, size_t len, int v);
void flt_jr_sm_free(jr_strmap *m);

/* Interval sets of byte ranges [a, b), sorted, merged. */
typedef struct jr_ivl {
    uint64_t a, b;
} jr_ivl;

typedef struct jr_ivset {
    jr_ivl *v;
    size_t n, cap;
} jr_ivset;

int flt_jr_iv_add(jr_ivset *s, uint64_t a, uint64_t b);
uint64_t flt_jr_iv_max_end(const jr_ivset *s);
/* Where the set covers everything to the end (a kept truncate decided the
 * size and all bytes from there on), or UINT64_MAX. */
uint64_t flt_jr_iv_fixed_from(const jr_ivset *s);
void flt_jr_iv_free(jr_ivset *s);

/* One journaled operation: a BEGIN and what its DONE (and DROP) and the
 * syncs after it say. */
typedef struct jr_op {
    jr_rec r;
    int has_done;
    int64_t result;
    int durable;
    int dropped;       /* WRITE_B: a DROP names it */
    uint64_t write_no; /* WRITE_B: its rank among the view's writes
                           * (the ledger's "write=N": offsets repeat) */
    /* inode token (writes, truncates, syncs) at the end of step 1 */
    int tok;
    /* step-1 bookkeeping */
    uint64_t done_pos;  /* writes, truncates: rank among the inode's DONEs;
                           * metadata: among its first directory's */
    uint64_t done_pos2; /* metadata: among its second directory's */
    int dir1, dir2;     /* metadata: parent directory tokens (-1: none) */
    uint64_t snap;      /* SYNC / DIRSYNC: DONE count when it began */
} jr_op;

/* The BEGIN records of a journal (or of one session of it), in journal
 * order; pointers point into the caller's buffer. */
typedef struct jr_view {
    jr_op *ops;
    size_t nops, cap;
    size_t torn; /* bytes of torn records skipped */
    uint64_t records, writes, sessions;
    size_t bad_at, bad_next; /* -EBADMSG: damage at bad_at, a valid record
                              * of the same session at bad_next */
} jr_view;

/* Decode BUF[0..SIZE) into V (zeroed first).  A record that does not
 * verify is a torn tail: the writer died while appending it.  WHOLE: a
 * valid record after it must open a new session (a restarted process went
 * on appending after the torn bytes) and decoding resumes there; any other
 * valid record after damage means a hole that could hide operations:
 * -EBADMSG.  Else (one live session, read while others may append):
 * decoding stops at the first record that does not verify. */
int flt_jr_load(jr_view *v, const uint8_t *buf, size_t size, int whole);
/* Step 1: fill has_done, result, durable, dropped and tok of every op.
 * NAMES, if not NULL, receives the map name -> inode token as it stands
 * after the last record (the caller frees it). */
int flt_jr_durability(jr_view *v, jr_strmap *names);
void flt_jr_view_free(jr_view *v);

/* Undoing one write or truncate tail on a file open read-write as FD,
 * outside the ranges KEPT covers (later kept changes win: PL1 of
 * powerloss.c), with an extension undone by truncating back (PL2):
 *
 *     flt_jr_undo_begin(&u, fd, old, base, old_end);   old bytes of [base, old_end)
 *     flt_jr_undo_range(&u, kept, a, b);               any number of sub-ranges
 *     flt_jr_undo_finish(&u, kept, end);               end: where the change ended
 *
 * undo_finish shrinks the file to the largest of OLD_END and what KEPT
 * still needs when END lies beyond OLD_END, and zeroes the undone bytes
 * beyond OLD_END that stay inside it; it always releases U. */
typedef struct jr_undo {
    int fd;
    const uint8_t *old;
    uint64_t base, old_end;
    uint64_t size;   /* file size now */
    jr_ivset absent; /* undone bytes at or beyond old_end */
    int err;
} jr_undo;

int flt_jr_undo_begin(jr_undo *u, int fd, const uint8_t *old, uint64_t base, uint64_t old_end);
int flt_jr_undo_range(jr_undo *u, const jr_ivset *kept, uint64_t a, uint64_t b);
int flt_jr_undo_finish(jr_undo *u, const jr_ivset *kept, uint64_t end);

#endif
