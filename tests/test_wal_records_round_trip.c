/*
 * test_wal_records_round_trip.c -- records of every size read back exactly
 * across blocks, segments and generations; concurrent flushers share fsyncs
 * and lose nothing; rewriting a partial block keeps its records (W1); a new
 * generation never reads stale blocks beyond the old end.
 *
 * Part of the wal suite (once test_wal.c); the helpers it shares
 * with the other test_wal_*.c files are in wal_helpers.h.
 */
#include "wal_helpers.h"

/* ==========================================================================
 * Round trips
 * ======================================================================== */

TU_BACKEND_TEST(wal, random_sizes_round_trip_across_segments_and_generations, .fini = tu_cleanup, .timeout = 120) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    tu_rng rng = {42};
    uint64_t start = 0, prev = 0;
    uint64_t appended_bytes = 0;

    for (uint32_t gen = 1; gen <= 3; gen++) {
        wal *w = wopen(&f, gen, start, prev, 4 * WAL_BLOCK, NULL);
        model_reopen(&m, start, gen);
        for (int i = 0; i < 120; i++) {
            size_t len = (i % 25 == 24) ? (size_t)tu_range(&rng, SEG + 1, SEG + 40000)
                                        : (size_t)tu_below(&rng, 3 * WAL_BLOCK + 1);
            add(w, &m, gen, len, tu_next(&rng));
            appended_bytes += WAL_REC_HDR + len;
            if (i % 10 == 9) wflush(w);
        }
        wflush(w);
        wal_stats st;
        wal_get_stats(w, &st);
        cr_assert_eq(st.records, 120);
        cr_assert_geq(st.syncs, 12);
        wal_close(w);

        /* recovery: the whole log so far, and where to go on */
        rd_result res = read_log(&f, 0, 0, &m, 0);
        cr_assert_eq(res.rc, ENG_NOTFOUND, "gen %u: %s after %zu records", gen, eng_strerror(res.rc), res.n);
        cr_assert_eq(res.n, m.n);
        cr_assert_eq(res.trimmed, 0);
        cr_assert_eq(res.max_gen, gen);
        start = res.end;
        prev = res.last;
    }
    expect_clean(&f, &m, 0, 0, 0);
    cr_assert_gt(m.r[m.n - 1].end / SEG, 10, "the log should span many segments");
    for (uint64_t s = 0; s <= m.r[m.n - 1].end / SEG; s++)
        cr_assert(seg_file_exists(&f, s * SEG), "segment %llu missing", (unsigned long long)s);
    /* a reader may start at any record boundary */
    size_t mid = m.n / 2;
    expect_clean(&f, &m, m.r[mid].lsn, m.r[mid - 1].lsn, mid);
    (void)appended_bytes;
    model_free(&m);
    fx_done(&f);
}

TU_BACKEND_TEST(wal, records_spanning_blocks_and_segments_read_back_exactly, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    uint64_t seed = 1;

    /* a header straddling a block boundary: 4 bytes before it (then the
     * last sector's trailer), 28 after the next block's header */
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 8), seed++);
    const mrec *r = add(w, &m, 1, 5000, seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, WAL_BLOCK - 8);
    /* an empty record whose header straddles */
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 16), seed++);
    r = add(w, &m, 1, 0, seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, WAL_BLOCK - 16);
    /* a record ending exactly at a block end: the next opens the block */
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), 1024), seed++);
    r = add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK), seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, 1024);
    cr_assert_eq(r->end % WAL_BLOCK, 0);
    r = add(w, &m, 1, 100, seed++);
    cr_assert_eq(r->lsn % WAL_BLOCK, WAL_BLOCK_HDR);
    wflush(w);

    /* a header straddling the segment boundary */
    while (wal_insert_lsn(w) < SEG - 2 * WAL_BLOCK) add(w, &m, 1, 1000, seed++);
    add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 8), seed++);
    cr_assert_lt(wal_insert_lsn(w), SEG);
    if (wal_insert_lsn(w) < SEG - 8) add(w, &m, 1, len_to_reach(wal_insert_lsn(w), WAL_BLOCK - 8), seed++);
    r = add(w, &m, 1, 3 * WAL_BLOCK, seed++);
    cr_assert_eq(r->lsn, SEG - 8, "the header should straddle the segment boundary");
    /* a record spanning blocks and a whole segment, and one larger than
     * the buffer (which must grow) */
    r = add(w, &m, 1, SEG + 5000, seed++);
    cr_assert_lt(r->lsn / SEG, (r->end - 1) / SEG);
    add(w, &m, 1, 7, seed++);
    wflush(w);
    wal_close(w);

    expect_clean(&f, &m, 0, 0, 0);
    cr_assert(seg_file_exists(&f, 0) && seg_file_exists(&f, SEG) && seg_file_exists(&f, 2 * SEG));
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Group commit
 * ======================================================================== */

#define GC_THREADS 4
#define GC_ROUNDS  60
#define GC_FREE    300

typedef struct gc_thread {
    wal *w;
    int tid;
    pthread_barrier_t *bar; /* NULL: free running */
    int first, count;       /* sequence numbers [first, first + count) */
    int flushes, failures;
    uint64_t lsn[GC_ROUNDS + GC_FREE];
} gc_thread;

static uint64_t gc_seed(int tid, int seq) { return ((uint64_t)tid << 32) | (uint64_t)seq; }

static size_t gc_len(int tid, int seq) { return 16 + (size_t)(rng_mix64(gc_seed(tid, seq)) % 3000); }

/* Payload of thread TID's record SEQ: (tid, seq) then seeded bytes. */
static uint8_t *gc_payload(int tid, int seq, size_t *len) {
    *len = gc_len(tid, seq);
    uint8_t *p = payload(*len, gc_seed(tid, seq));
    uint64_t id[2] = {(uint64_t)tid, (uint64_t)seq};
    memcpy(p, id, sizeof id);
    return p;
}

static void *gc_main(void *arg) {
    gc_thread *t = arg;
    for (int seq = t->first; seq < t->first + t->count; seq++) {
        size_t len;
        uint8_t *p = gc_payload(t->tid, seq, &len);
        uint64_t end;
        int rc = wal_append(t->w, WAL_REC_BATCH, p, len, &t->lsn[seq], &end);
        free(p);
        if (t->bar) pthread_barrier_wait(t->bar); /* every thread has appended */
        if (rc == ENG_OK) {
            rc = wal_flush(t->w, end);
            t->flushes++;
        }
        if (rc != ENG_OK || wal_durable_lsn(t->w) < end) t->failures++;
    }
    return NULL;
}

static void gc_run(gc_thread *th, wal *w, pthread_barrier_t *bar, int first, int count) {
    pthread_t tids[GC_THREADS];
    for (int i = 0; i < GC_THREADS; i++) {
        th[i].w = w;
        th[i].tid = i;
        th[i].bar = bar;
        th[i].first = first;
        th[i].count = count;
        th[i].flushes = th[i].failures = 0;
        cr_assert_eq(pthread_create(&tids[i], NULL, gc_main, &th[i]), 0);
    }
    for (int i = 0; i < GC_THREADS; i++) pthread_join(tids[i], NULL);
    for (int i = 0; i < GC_THREADS; i++)
        cr_assert_eq(th[i].failures, 0, "thread %d: an append or flush failed, or returned early", i);
}

TU_BACKEND_TEST(wal, concurrent_flushers_share_fsyncs_and_lose_nothing, .fini = tu_cleanup, .timeout = 120) {
    fx f;
    fx_init(&f, *backend);
    wal *w = wopen(&f, 1, 0, 0, 8 * WAL_BLOCK, NULL);
    static gc_thread th[GC_THREADS];

    /* Phase 1, deterministic: in each round every thread appends, then all
     * four flush.  The first flusher's snapshot holds all four records, so
     * one fsync (two when the round crosses into a new segment) serves the
     * four calls; the others find their record durable. */
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, GC_THREADS);
    int syncs0 = hook_count(ENG_IO_SYNC);
    gc_run(th, w, &bar, 0, GC_ROUNDS);
    pthread_barrier_destroy(&bar);
    int flushes = 0;
    for (int i = 0; i < GC_THREADS; i++) flushes += th[i].flushes;
    int syncs = hook_count(ENG_IO_SYNC) - syncs0;
    cr_assert_gt(syncs, 0);
    cr_assert_lt(syncs, flushes, "%d fsyncs for %d flush calls: no group commit", syncs, flushes);
    cr_assert_leq(syncs, GC_ROUNDS + (int)(wal_insert_lsn(w) / SEG) + 1,
                  "%d fsyncs for %d rounds: flushers did not coalesce", syncs, GC_ROUNDS);

    /* Phase 2, free running: appends, buffer-full write-outs and flushes race. */
    gc_run(th, w, NULL, GC_ROUNDS, GC_FREE);
    wal_close(w);

    /* Every record of every thread reads back, each thread's in order. */
    wal_reader *r;
    cr_assert_eq(wal_reader_open(f.io, f.dir, SEG, 0, 0, &f.rep, &r), ENG_OK);
    int next[GC_THREADS] = {0};
    size_t total = 0;
    wal_record rec;
    int rc;
    while ((rc = wal_reader_next(r, &rec)) == ENG_OK) {
        cr_assert_geq(rec.len, 16);
        uint64_t id[2];
        memcpy(id, rec.payload, sizeof id);
        cr_assert_lt(id[0], GC_THREADS, "bad thread id %llu", (unsigned long long)id[0]);
        int tid = (int)id[0], seq = (int)id[1];
        cr_assert_eq(seq, next[tid], "thread %d: record %d where %d was due", tid, seq, next[tid]);
        cr_assert_eq(rec.lsn, th[tid].lsn[seq], "thread %d record %d: lsn", tid, seq);
        size_t len;
        uint8_t *p = gc_payload(tid, seq, &len);
        cr_assert_eq(rec.len, len);
        cr_assert(memcmp(p, rec.payload, len) == 0, "thread %d record %d: payload differs", tid, seq);
        free(p);
        next[tid]++;
        total++;
    }
    cr_assert_eq(rc, ENG_NOTFOUND, "the log ended with %s", eng_strerror(rc));
    for (int i = 0; i < GC_THREADS; i++)
        cr_assert_eq(next[i], GC_ROUNDS + GC_FREE, "thread %d: %d records read", i, next[i]);
    cr_assert_eq(total, (size_t)GC_THREADS * (GC_ROUNDS + GC_FREE));
    wal_reader_close(r);
    fx_done(&f);
}

/* ==========================================================================
 * W1: a partly filled block is rewritten, its records never change
 * ======================================================================== */

TU_BACKEND_TEST(wal, w1_rewriting_a_partial_block_keeps_earlier_records_identical, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 4 * WAL_BLOCK, NULL);
    const mrec *a = add(w, &m, 1, 300, 11);
    wflush(w);
    uint8_t blk1[WAL_BLOCK], blk2[WAL_BLOCK];
    raw_read(&f, 0, blk1, WAL_BLOCK);
    uint64_t a_lsn = a->lsn, a_end = a->end;
    /* zero-padded past the insert position (but for the trailer of the
     * sector A ends in) */
    for (size_t i = a_end; i < WAL_BLOCK; i++)
        cr_assert(blk1[i] == 0 || (i < 512 && i >= WAL_SECTOR_DATA), "byte %zu past the insert position is not zero",
                  i);

    for (int round = 0; round < 5; round++) {
        add(w, &m, 1, 200 + (size_t)round * 300, 20 + (uint64_t)round);
        wflush(w);
        raw_read(&f, 0, blk2, WAL_BLOCK);
        cr_assert(memcmp(blk1 + a_lsn, blk2 + a_lsn, a_end - a_lsn) == 0, "round %d: record A's bytes changed on disk",
                  round);
        /* the header: position, generation, continuation and magic stay;
         * only the witness (and its checksum, and the trailers of sectors
         * that gained bytes) moves forward */
        cr_assert(memcmp(blk1 + WB_LSN_OFF, blk2 + WB_LSN_OFF, 8) == 0 &&
                  memcmp(blk1 + WB_GEN_OFF, blk2 + WB_GEN_OFF, WB_CHECK_OFF - WB_GEN_OFF) == 0);
        cr_assert_geq(rd64le(blk2 + WB_DURABLE_OFF), rd64le(blk1 + WB_DURABLE_OFF));
    }
    cr_assert_gt(rd64le(blk2 + WB_DURABLE_OFF), a_end, "the witness should have moved past A");
    wal_close(w);
    expect_clean(&f, &m, 0, 0, 0);
    model_free(&m);
    fx_done(&f);
}

/* ==========================================================================
 * Generations
 * ======================================================================== */

/* Each record fills one block's payload exactly (starting at block + 32),
 * so after a reopen the new generation's record can sit at the very LSN
 * of an old one and the old next block chains to it perfectly: only the
 * generation tells them apart. */
#define ONE_BLOCK_LEN (WB_PAYLOAD_T - WAL_REC_HDR)
#define WB_PAYLOAD_T  WAL_BLOCK_PAYLOAD

TU_BACKEND_TEST(wal, reopen_in_new_generation_never_reads_stale_blocks_beyond_the_old_end, .fini = tu_cleanup) {
    fx f;
    fx_init(&f, *backend);
    model m = {0};
    wal *w = wopen(&f, 1, 0, 0, 16 * WAL_BLOCK, NULL);
    for (int i = 0; i < 2; i++) {
        add(w, &m, 1, ONE_BLOCK_LEN, 100 + (uint64_t)i);
        wflush(w);
    }
    for (int i = 2; i < 10; i++) add(w, &m, 1, ONE_BLOCK_LEN, 100 + (uint64_t)i);
    cr_assert_eq(wal_write_out(w), ENG_OK); /* written, never synced */
    wal_close(w);
    for (int i = 0; i < 10; i++) cr_assert_eq(m.r[i].lsn, (uint64_t)i * WAL_BLOCK + WAL_BLOCK_HDR);

    /* the write of block 2 was lost: the log ends after record 1 */
    raw_zero(&f, 2 * WAL_BLOCK, WAL_BLOCK);
    rd_result res = read_log(&f, 0, 0, &m, 0);
    cr_assert_eq(res.rc, ENG_NOTFOUND);
    cr_assert_eq(res.n, 2);
    cr_assert_eq(res.end, 2 * WAL_BLOCK);
    cr_assert_eq(res.trimmed, 1);
    cr_assert_eq(res.max_gen, 1);

    /* generation 2 writes a new record 2 at the old one's LSN */
    model_cut(&m, 2);
    w = wopen(&f, 2, res.end, res.last, 16 * WAL_BLOCK, NULL);
    const mrec *r2 = add(w, &m, 2, ONE_BLOCK_LEN, 999);
    cr_assert_eq(r2->lsn, 2 * WAL_BLOCK + WAL_BLOCK_HDR);
    wflush(w);
    wal_close(w);

    /* the trap is armed: block 3 is a valid generation-1 block at its own
     * position whose record names the new record 2 as its predecessor */
    uint8_t blk[WAL_BLOCK];
    raw_read(&f, 3 * WAL_BLOCK, blk, WAL_BLOCK);
    cr_assert_eq(rd64le(blk + WB_LSN_OFF), 3 * WAL_BLOCK);
    cr_assert_eq(blk[WB_GEN_OFF], 1, "stale block 3 should be generation 1");
    cr_assert_eq(rd64le(blk + WAL_BLOCK_HDR + XL_PREV_OFF), r2->lsn);

    res = read_log(&f, 0, 0, &m, 0);
    char buf[2048];
    cr_assert_eq(res.rc, ENG_NOTFOUND, "%s: %s", eng_strerror(res.rc), tu_reports_str(&f.reps, buf, sizeof buf));
    cr_assert_eq(res.n, 3, "stale generation-1 records were read after the new end");
    cr_assert_eq(res.end, 3 * WAL_BLOCK);
    cr_assert_eq(res.max_gen, 2);
    cr_assert_eq(f.reps.total, 0);
    model_free(&m);
    fx_done(&f);
}
