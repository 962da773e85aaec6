/*
 * recovery_helpers.h -- what the test_recovery_*.c suites share (one file,
 * test_recovery.c, before the suite was split): reopen-and-check helpers,
 * options and the child-to-parent messages. All functions are static inline:
 * a suite that uses none of one compiles without a warning.  The suites'
 * description:
 *
 * test_recovery_*.c -- crashes at any point of the write path lose no
 * acknowledged commit, keep batches whole, rebuild torn pages from their
 * images, trim only a torn tail and report damage to the synced log
 * (docs/engine.md, "Write path, WAL and commit" and "Recovery"; wal.h W1-W4;
 * recovery.h).
 *
 * A crash is a child process that dies: SIGKILL from the parent, _exit()
 * from an I/O hook at the Nth write, or _exit() without eng_close.  The
 * page cache survives a process crash, so a "torn" page or log tail is
 * made by editing the files after the child is gone.  Children report to
 * the parent through a pipe, only after a call returned (an
 * acknowledgement); the parent reopens the directory and asserts:
 *   P  prefix: the keys present are exactly 0..m-1, with their values (keys
 *      are written in index order, one batch per key unless said), and
 *      recovery_info.recovered_seq == m (sequences start at 1);
 *   A  every acknowledged write is present; at most the one write in
 *      flight at the crash is present beyond them;
 *   B  a multi-op batch is wholly present or wholly absent;
 *   C  corruption in the synced part of the log fails the open with
 *      ENG_CORRUPTION (layer wal_record) and changes nothing on disk; a
 *      torn page without an image is detected, never returned as data;
 *   V  eng_verify finds nothing after every successful recovery.
 * Tests (each once per I/O backend; rounds name their seed):
 *   sigkill_during_commit_load_recovers_exact_prefix      P A V
 *   torn_page_after_crash_is_rebuilt_from_its_image       FPI restores a torn leaf
 *   torn_page_without_image_is_detected_not_returned      C (full_page_writes off)
 *   wal_compression_zstd_round_trip                       zstd FPIs, smaller, restore
 *   corrupted_record_in_synced_middle_is_reported         C (W3)
 *   torn_tail_is_trimmed                                  trimmed == 1, P A, log goes on
 *   batch_interrupted_by_crash_leaves_no_trace            B A, crash at the Nth write
 *   crash_during_recovery_reaches_the_same_state          recovery interrupted, then redone
 *   group_commit_acknowledges_nothing_before_its_fsync    W2, one fsync for many
 *   failed_fsync_poisons_the_handle                       W4, A
 *   sync_off_survives_clean_close_and_recovers_after_crash
 *   checkpoint_removes_and_archives_segments
 * Children are made with cu_fork (crashutil.h): they die with the test
 * process and after CU_CHILD_ALARM seconds at the latest.  Seeds derive
 * from CU_SEED (environment) and every message names its round's seed.
 */
#ifndef TESTS_RECOVERY_HELPERS_H
#define TESTS_RECOVERY_HELPERS_H

#include <stdarg.h>
#include <stdatomic.h>

#include "crashutil.h"
#include "wal.h"

#define T_OPTS .timeout = 300, .fini = cu_fini

#define SEG (64u << 10)
#define PS  8192u

/* ---- shared pieces ---------------------------------------------------------- */

static inline int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static inline size_t val_plain(void *ctx, uint64_t i, uint8_t buf[CU_VMAX]) {
    (void)ctx;
    return cu_val(buf, i, 0, 0, 0);
}

static inline int put_plain(eng_db *db, uint64_t i, uint64_t *seq) {
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    size_t kl = cu_key(k, i), vl = cu_val(v, i, 0, 0, 0);
    return eng_put(db, k, kl, v, vl, seq);
}

static inline int put_gen(eng_db *db, uint64_t i, uint32_t gen, int compressible) {
    char k[CU_KLEN + 1];
    uint8_t v[CU_VMAX];
    size_t kl = cu_key(k, i), vl = cu_val(v, i, gen, 0, compressible);
    return eng_put(db, k, kl, v, vl, NULL);
}

/* Options most rounds share. */
static inline eng_options base_opts(int backend, int sync_mode, size_t cache, uint64_t ckpt_bytes) {
    eng_options o;
    eng_options_init(&o);
    o.io_backend = backend;
    o.sync_mode = sync_mode;
    o.wal_segment_size = SEG;
    o.checkpoint_wal_bytes = ckpt_bytes;
    if (cache) o.cache_size = cache;
    return o;
}

/* A fresh, empty directory at PATH (reused between rounds). */
static inline void fresh_dir(const char *path) {
    tu_rm_rf(path);
    cr_assert(mkdir(path, 0700) == 0, "mkdir %s: %s", path, strerror(errno));
}

/* Reopen DIR, check P and V with VAL (batches of PER_BATCH keys), close;
 * returns m and the recovery info in *RI. */
static inline uint64_t reopen_check_batches(const char *dir, const eng_options *o, cu_valfn val, void *ctx,
                                            eng_recovery_info *ri, const char *what, uint64_t per_batch) {
    tu_reports rep;
    tu_reports_init(&rep);
    eng_options oo = *o;
    oo.io_hooks = NULL;
    oo.on_corruption = tu_collect;
    oo.on_corruption_ctx = &rep;
    eng_db *db = NULL;
    int rc = eng_open(dir, &oo, &db);
    char buf[2048];
    cr_assert_eq(rc, ENG_OK, "%s: reopen after the crash: %s\n%s", what, eng_strerror(rc),
                 tu_reports_str(&rep, buf, sizeof buf));
    eng_get_recovery_info(db, ri);
    uint64_t m = cu_check_prefix(db, val, ctx, what);
    cr_assert_eq(m % per_batch, 0, "%s: batch %llu is cut: %llu of its %llu keys present", what,
                 (unsigned long long)(m / per_batch), (unsigned long long)(m % per_batch),
                 (unsigned long long)per_batch);
    uint64_t b = m / per_batch;
    /* Sequences are transaction ids: a batch cut by an earlier crash kept
     * its id (aborted, never reused), so the last committed sequence may
     * count one more than the batches present. */
    /* ... and after a crash, ids restart above the lease (engine.c
     * XID_LEASE): the batches present are then fewer than the last id. */
    cr_assert(ri->recovered_seq >= b,
              "%s: recovered_seq %llu but %llu batches are present (committed %llu aborted %llu)", what,
              (unsigned long long)ri->recovered_seq, (unsigned long long)b, (unsigned long long)ri->txns_committed,
              (unsigned long long)ri->txns_aborted);
    /* A batch cut by the crash keeps its id (aborted, never reused). */
    /* Ids are never reused: a restart continues above the id lease
     * (engine.c XID_LEASE), so the last id used may lie well above. */
    cr_assert(eng_last_seq(db) >= b, "%s: eng_last_seq %llu after recovering %llu batches", what,
              (unsigned long long)eng_last_seq(db), (unsigned long long)b);
    cu_verify_clean(db, what);
    rc = eng_close(db);
    cr_assert_eq(rc, ENG_OK, "%s: close after recovery: %s", what, eng_strerror(rc));
    return m;
}

static inline uint64_t reopen_check(const char *dir, const eng_options *o, cu_valfn val, void *ctx,
                                    eng_recovery_info *ri, const char *what) {
    return reopen_check_batches(dir, o, val, ctx, ri, what, 1);
}

/* Messages from children: pairs (tag, value). */
enum { MSG_ACK = 1, MSG_FAIL = 2, MSG_COUNT = 3, MSG_VAL = 4 };
typedef struct msg {
    uint32_t tag, step;
    uint64_t v;
} msg;

static inline void child_send(int fd, uint32_t tag, uint32_t step, uint64_t v) {
    msg m = {tag, step, v};
    if (cu_write_all(fd, &m, sizeof m) != 0) _exit(CU_EXIT_FAIL);
}

/* A step of the child failed with RC: tell the parent and die. */
static inline void child_fail(int fd, uint32_t step, int rc) {
    child_send(fd, MSG_FAIL, step, (uint64_t)(uint32_t)rc);
    _exit(CU_EXIT_FAIL);
}

/* Read every message of a child to EOF, then reap it.  Returns the wait
 * status; messages go to MSGS (up to CAP; *N gets the count). */
static inline int child_collect(pid_t pid, int fd, msg *msgs, size_t cap, size_t *n) {
    *n = 0;
    msg m;
    while (cu_read_all(fd, &m, sizeof m) == sizeof m) {
        if (*n < cap) msgs[*n] = m;
        (*n)++;
    }
    close(fd);
    return cu_wait(pid);
}

/* Fail the test if a child reported a failed step. */
static inline void assert_no_child_fail(const msg *msgs, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        cr_assert(msgs[i].tag != MSG_FAIL, "%s: the child's step %u failed: %s", what, msgs[i].step,
                  eng_strerror((int)msgs[i].v));
}

#endif /* TESTS_RECOVERY_HELPERS_H */
