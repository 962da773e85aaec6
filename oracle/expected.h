/*
 * expected.h -- the oracle's expected state: for every key in [0, max_key)
 * the value it must hold, in a memory-mapped file that survives SIGKILL.
 * Pure model: it knows no engine, only keys, value seeds and commit
 * sequence numbers that the driver reports to it.
 *
 * File EXP_DIR/expected (little-endian):
 *   0    8   magic "ORCEXP01"
 *   8    8   max_key
 *   16   8   seed of the run that created it
 *   24   8   durable_seq: the highest commit sequence the engine called
 *            durable (recovery must reach at least this)
 *   32   8   last_seq: the highest sequence acknowledged to the driver
 *   40   8   trace records claimed (the trace's length)
 *   48   16  (zero)
 *   64   8*max_key  one entry per key: u32 cur | u32 pending
 *     cur      0 = absent, else the value seed the key holds
 *     pending  0 = none, ORC_DEL = a delete in flight, else the value seed
 *              of a put in flight
 * File EXP_DIR/inflight: ORC_INFLIGHT_SLOTS slots of 144 bytes, one per
 * writer thread (orc_inflight): the batch of two or more keys its engine
 * call is writing, or n = 0.
 * File EXP_DIR/trace: 24-byte records u64 seq | u64 key | u32 old | u32 new
 * (orc_trace_rec), one per key of each acknowledged write, stored after
 * the engine acknowledged it into a MAP_SHARED mapping (SIGKILL keeps it:
 * the page cache has it; no system call per write).
 *
 * Protocol for a write (the driver holds the key's lock, orc_lock):
 *   1. orc_mark_pending(key, new)   before the engine sees the write
 *   2. the engine call
 *   3. ok:  orc_settle(key, seq)    cur = new, pending = 0, trace += (seq, key, old, new)
 *      err: leave it pending: after a crash or reopen the key may hold
 *           either value (orc_resolve settles it to what the engine shows)
 * After a crash, recovery reports the last sequence it recovered, R:
 *   orc_rewind(R) undoes, newest first, every traced write with seq > R,
 *   so the expected state is the state at R exactly (a prefix of history),
 *   except for keys still pending, which may hold either value.
 *   R must be >= durable_seq: a synced commit was lost otherwise.
 *
 * Invariants:
 *   E1  a key's cur changes only under its lock (orc_lock)
 *   E2  the trace holds every acknowledged write since the last
 *       orc_checkpoint_trace, in commit order per key
 *   E3  readers (no lock) take orc_get before and after their engine read:
 *       the engine's answer must match one of the values seen (cur or
 *       pending, before or after)
 *   E4  a slot of EXP_DIR/inflight holds a batch exactly while its
 *       thread's engine call for it runs (its keys pending throughout)
 */
#ifndef ORACLE_EXPECTED_H
#define ORACLE_EXPECTED_H

#include <stddef.h>
#include <stdint.h>

#define ORC_DEL 0xffffffffu
/* Keys are common/keys.h's ("k" + 15 digits: the same keys engine-tool load
 * writes); a key number is the oracle's KEY. */

typedef struct orc_state orc_state;

typedef struct orc_entry {
    uint32_t cur;
    uint32_t pending;
} orc_entry;

typedef struct orc_trace_rec {
    uint64_t seq;
    uint64_t key;
    uint32_t old_v;
    uint32_t new_v;
} orc_trace_rec;

/* Open EXP_DIR/expected for MAX_KEY keys, creating it (all absent) when
 * missing or when FRESH.  An existing file with another max_key is an
 * error (-EINVAL).  Returns 0 or -errno. */
int orc_open(const char *exp_dir, uint64_t max_key, uint64_t seed, int fresh, orc_state **out);
void orc_close(orc_state *s);

uint64_t orc_max_key(const orc_state *s);
uint64_t orc_seed(const orc_state *s);

/* Key stripes: a writer locks a key (or a sorted group) before marking it
 * pending and until it has settled it. */
void orc_lock(orc_state *s, uint64_t key);
void orc_unlock(orc_state *s, uint64_t key);
/* Stripe index of a key, so a batch can lock each stripe once, in order. */
unsigned orc_stripe(const orc_state *s, uint64_t key);
void orc_lock_stripe(orc_state *s, unsigned stripe);
void orc_unlock_stripe(orc_state *s, unsigned stripe);
unsigned orc_nstripes(const orc_state *s);

orc_entry orc_get(const orc_state *s, uint64_t key);
void orc_mark_pending(orc_state *s, uint64_t key, uint32_t new_v);
/* Settle a pending write acknowledged with commit sequence SEQ. */
int orc_settle(orc_state *s, uint64_t key, uint64_t seq);
/* Settle a pending key to what the engine shows (present with value seed
 * V, or absent: V = 0); the caller checked V is cur or pending. */
void orc_resolve(orc_state *s, uint64_t key, uint32_t v);

/* A fresh value seed for KEY (never 0 or ORC_DEL, differs from cur). */
uint32_t orc_next_value(orc_state *s, uint64_t key, uint64_t rnd);

void orc_note_durable(orc_state *s, uint64_t seq);
uint64_t orc_durable_seq(const orc_state *s);
uint64_t orc_last_seq(const orc_state *s);

/* After a crash: undo traced writes with seq > R.  Returns the number
 * undone, or -1 when R < durable_seq (a synced commit was lost: the
 * caller reports `lost`). */
int64_t orc_rewind(orc_state *s, uint64_t r);
/* After the post-crash check passed: the state is settled, start a new
 * trace (and set durable_seq = last_seq = R). */
int orc_checkpoint_trace(orc_state *s, uint64_t r);

/* Batches in flight (E4): a batch of two or more keys is stored in its
 * thread's slot after its keys were marked pending and before the engine
 * sees it, and the slot is freed when the engine call returned.  A batch
 * a crash cut is still in its slot for the next process, which must find
 * all its keys old or all new (a batch is all or nothing across a crash
 * too); a key's pending value alone allows either for each key.  Stores
 * to the MAP_SHARED file survive SIGKILL, as the trace's do. */
#define ORC_INFLIGHT_SLOTS 256
#define ORC_INFLIGHT_KEYS  8
typedef struct orc_inflight {
    uint32_t n;      /* keys; 0: the slot is free (stored last) */
    uint32_t thread; /* the writer's worker number */
    uint64_t op;     /* the driver's op id (epoch << 32 | call) */
    uint64_t key[ORC_INFLIGHT_KEYS];
    uint32_t old_v[ORC_INFLIGHT_KEYS]; /* value seeds before it, 0 absent */
    uint32_t new_v[ORC_INFLIGHT_KEYS]; /* value seeds it writes, 0 absent */
} orc_inflight;

/* Store batch B (B->n of 2 to ORC_INFLIGHT_KEYS keys) in slot SLOT. */
void orc_inflight_begin(orc_state *s, unsigned slot, const orc_inflight *b);
/* Free slot SLOT: its engine call returned. */
void orc_inflight_end(orc_state *s, unsigned slot);
/* Copy the batches in the slots (at most CAP) into OUT; returns how many. */
size_t orc_inflight_read(const orc_state *s, orc_inflight *out, size_t cap);
/* Free every slot (the batches read were judged). */
void orc_inflight_clear(orc_state *s);

/* Values: derived from (key, value seed) alone, so checking needs no
 * stored copy.  Length in [min_len, max_len]; the first 12 bytes encode
 * key and seed so a wrong value can be named ("value of key K, seed V"). */
size_t orc_value_len(uint64_t key, uint32_t v, size_t min_len, size_t max_len);
void orc_value(uint64_t key, uint32_t v, uint8_t *buf, size_t len);
/* 1 if BUF is exactly the WANT_LEN-byte value of (key, v) (a caller with
 * its own length rule, such as occasional large values). */
int orc_value_is(uint64_t key, uint32_t v, const uint8_t *buf, size_t len, size_t want_len);
/* 1 if BUF is exactly the value of (key, v) within the length bounds. */
int orc_value_ok(uint64_t key, uint32_t v, const uint8_t *buf, size_t len, size_t min_len, size_t max_len);
/* Decode the (key, value seed) a value claims to be, for messages. */
int orc_value_whose(const uint8_t *buf, size_t len, uint64_t *key, uint32_t *v);

#endif
