/*
 * test_faults_carried_cache_flip.c -- damage rule D7 of the fault library
 * (faults/faults.h): a bitflip_cache flip in the page-header bytes the
 * per-KV page code covers, [20, 40), is present for good once its frame
 * is written to DIR/data byte for byte as it was right after the flip
 * (the stamped fields [0, 20) aside); a write of the block with other
 * bytes ends the watch; an engine that refuses the frame (KV4) leaves
 * nothing present.
 *
 * Every test opens a fresh database with per-KV protection on, fills its
 * 8 MiB cache with dirty pages (no checkpoint, no eviction: nothing is
 * written to DIR/data behind the test's back), then ticks the library
 * until a flip lands in [20, 40) of a leaf or internal page, block B.
 * Earlier flips elsewhere are put back by hand, so B's is the only damage
 * in the cache.  With one seed the tick sequence is the same every run.
 * The fake write-backs go through flt_hooks (before, pwrite, after) as
 * the engine's io.c issues them, with injection paused.
 *
 * Part of the faults suite: the helpers it shares with the other
 * test_faults_*.c files (ledger, options, damage table) are in
 * faults_helpers.h.
 */
#include "faults_helpers.h"

#define SEED       7u
#define MAX_TICKS  400 /* about one tick in eight lands in [20, 40); seed 7: tick 5, block 13, byte 24 */
#define COVERED_LO 20u /* past checksum, LSN and block (stamped on every write) */

/* ---- a header flip in a dirty frame ----------------------------------------- */

typedef struct hf {
    const char *run, *dir;
    char data[512]; /* DIR/data */
    flt_ctx *f;
    eng_db *db;
    tu_reports reps;
    uint64_t block, seq, byte; /* byte within the page */
    uint8_t mask;
    char line[1024];   /* the flip's ledger line */
    uint8_t frame[PS]; /* the frame right after the flip */
} hf;

/* Open a fresh database with per-KV codes (width 2) over the library's
 * hooks, make 400 puts (every leaf and internal page dirty and resident),
 * then tick until a bitflip_cache line lands in [20, 40) of a leaf or
 * internal page.  Other flips are put back.  Injection is left paused,
 * H->frame holds the flipped frame. */
static void hf_setup(hf *h) {
    memset(h, 0, sizeof *h);
    h->run = tu_tmpdir();
    h->dir = tu_tmpdir();
    snprintf(h->data, sizeof h->data, "%s/data", h->dir);
    flt_options fo = fopts(h->run, h->dir, SEED);
    fo.one_in[FLT_BITFLIP_CACHE] = 1;
    h->f = fopen_ok(&fo);
    tu_reports_init(&h->reps);
    eng_options o = tu_opts(ENG_IO_PSYNC, PS, 0, &h->reps);
    o.io_hooks = flt_hooks(h->f);
    o.checkpoint_wal_bytes = 0; /* only explicit checkpoints */
    o.cache_size = 8u << 20;    /* everything stays resident */
    o.block_protection_bytes_per_key = 2;
    h->db = tu_open(h->dir, &o);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 400; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(h->db, k, kl, v, vl, NULL), ENG_OK, "put %llu failed", (unsigned long long)i);
    }
    flt_thread_start(h->f, 0);
    uint64_t nb = eng_debug_nblocks(h->db);
    cr_assert(nb > 4, "only %llu blocks after 400 puts", (unsigned long long)nb);
    lg l0 = lg_read(h->run);
    size_t seen = l0.n;
    lg_free(&l0);
    cr_assert_eq(seen, 0, "ledger lines before any tick: %zu", seen);
    for (uint64_t i = 0; i < MAX_TICKS; i++) {
        flt_pause(h->f, 0);
        flt_op(h->f, i);
        flt_tick(h->f, h->db);
        flt_pause(h->f, 1);
        lg l = lg_read(h->run);
        cr_assert(l.n <= seen + 1, "one tick wrote %zu ledger lines", l.n - seen);
        if (l.n == seen) {
            lg_free(&l);
            continue;
        } /* no resident block drawn */
        seen = l.n;
        const char *line = l.lines[l.n - 1];
        cr_assert(line_is(line, "class", "bitflip_cache") && line_is(line, "file", "data"),
                  "a tick with only bitflip_cache on wrote: %s", line);
        int64_t block = jnum(line, "block"), bit = jnum(line, "bit"), off = jnum(line, "offset"),
                seq = jnum(line, "seq");
        uint64_t mask = jmask(line);
        cr_assert(block >= 0 && (uint64_t)block < nb && bit >= 0 && bit < (int64_t)PS * 8 && seq >= 0,
                  "ledger line out of range: %s", line);
        cr_assert_eq(off, block * (int64_t)PS, "offset is not block * page size: %s", line);
        cr_assert(mask && mask < 256 && !(mask & (mask - 1)), "mask is not one bit: %s", line);
        uint64_t byte = (uint64_t)bit / 8;
        size_t ps = 0;
        uint8_t *p = eng_debug_frame_bytes(h->db, (uint64_t)block, &ps);
        cr_assert_not_null(p, "flipped block %lld is not resident: %s", (long long)block, line);
        cr_assert_eq(ps, PS);
        uint8_t type = p[20] ^ (byte == 20 ? (uint8_t)mask : 0); /* the type before the flip */
        if (byte >= COVERED_LO && byte < PAGE_HDR && (type == PAGE_LEAF || type == PAGE_INTERNAL)) {
            memcpy(h->frame, p, PS);
            eng_debug_frame_release(h->db, (uint64_t)block);
            h->block = (uint64_t)block;
            h->seq = (uint64_t)seq;
            h->byte = byte;
            h->mask = (uint8_t)mask;
            snprintf(h->line, sizeof h->line, "%s", line);
            lg_free(&l);
            /* Nothing written yet: a watched flip is not damage on disk. */
            uint64_t s[DMG_CAP];
            cr_assert_eq(dmg_list(h->f, s), 0, "a cache flip is present before any write (%s)", h->line);
            return;
        }
        p[byte] ^= (uint8_t)mask; /* not the flip we want: put it back */
        eng_debug_frame_release(h->db, (uint64_t)block);
        lg_free(&l);
    }
    cr_assert_fail("no bitflip_cache flip in [20, 40) of a leaf or internal page in %d ticks (seed %u)", MAX_TICKS,
                   SEED);
}

/* A write of PAGE (PS bytes) at BLOCK of PATH through the library's
 * hooks, as io.c issues one: before(), the pwrite, after() with the
 * result.  Injection is paused: before() must leave the write alone. */
static void hook_write_block(flt_ctx *f, const char *path, uint64_t block, const uint8_t *page) {
    const eng_io_hooks *h = flt_hooks(f);
    uint8_t *buf = malloc(PS);
    cr_assert(buf != NULL);
    memcpy(buf, page, PS);
    eng_io_op op = {.kind = ENG_IO_WRITE, .file_id = 0, .path = path, .buf = buf, .offset = block * PS, .len = PS};
    int rc = h->before(h->ctx, &op);
    cr_assert_eq(rc, 0, "before() of a write with injection paused: %d", rc);
    cr_assert(!op.skip && op.offset == block * PS && op.len == PS && !memcmp(op.buf, page, PS),
              "before() changed a write with injection paused");
    int fd = open(path, O_WRONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    op.result = pwrite(fd, op.buf, PS, (off_t)op.offset);
    close(fd);
    cr_assert_eq(op.result, (int64_t)PS, "pwrite of block %llu: %lld", (unsigned long long)block, (long long)op.result);
    h->after(h->ctx, &op);
    free(buf);
}

/* Close the handle (it may refuse: the flip is still in its cache), then
 * the library. */
static void hf_teardown(hf *h) {
    eng_close(h->db); /* KV4 refuses block B's write-back: not ENG_OK, by design */
    flt_close(h->f);
}

/* ---- the tests -------------------------------------------------------------------- */

/* The engine's own write-back checks the dirty frame (KV4), reports the
 * mismatch and writes nothing: the watched flip never reaches the disk. */
Test(carried_cache_flip, a_header_flip_the_engine_refuses_to_write_is_not_present, T_OPTS) {
    static hf h;
    hf_setup(&h);
    char buf[2048];
    int rc = eng_checkpoint(h.db);
    cr_assert_neq(rc, ENG_OK, "the checkpoint wrote a frame with a header flip (%s)", h.line);
    cr_assert(tu_reports_has(&h.reps, ENG_LAYER_KV_PROTECTION, "data", (int64_t)h.block),
              "no kv_protection report for block %llu (checkpoint: %s; %s); reports:\n%s", (unsigned long long)h.block,
              eng_strerror(rc), h.line, tu_reports_str(&h.reps, buf, sizeof buf));
    cr_assert(!dmg_has(h.f, h.seq), "a flip the engine refused to write is present (%s)", h.line);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(h.f, s), 0, "damage present after a refused write-back (%s)", h.line);
    rc = eng_close(h.db);
    cr_assert_neq(rc, ENG_OK, "close of a handle whose write-back was refused succeeded (%s)", h.line);
    cr_assert(!dmg_has(h.f, h.seq), "a flip the engine refused to write is present after close (%s)", h.line);
    cr_assert_eq(dmg_list(h.f, s), 0, "damage present after close (%s)", h.line);
    flt_close(h.f);
}

/* The frame written back as it was right after the flip: present, and no
 * later write of the block takes it away (it was carried into the
 * engine's view of the page under a fresh checksum, like D5). */
Test(carried_cache_flip, a_header_flip_written_back_unchanged_is_present_for_good, T_OPTS) {
    static hf h;
    hf_setup(&h);
    hook_write_block(h.f, h.data, h.block, h.frame);
    cr_assert(dmg_has(h.f, h.seq), "the flipped frame was written unchanged, its flip is not present (%s)", h.line);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(h.f, s), 1, "present: exactly the carried flip (%s)", h.line);
    /* The page as it was before the flip, written over it. */
    static uint8_t clean[PS];
    memcpy(clean, h.frame, PS);
    clean[h.byte] ^= h.mask;
    hook_write_block(h.f, h.data, h.block, clean);
    cr_assert(dmg_has(h.f, h.seq), "a later write of the block took a carried flip away (%s)", h.line);
    cr_assert_eq(dmg_list(h.f, s), 1, "present after the rewrite: exactly the carried flip (%s)", h.line);
    eng_close(h.db); /* refuses block B (KV4): writes nothing of it */
    cr_assert(dmg_has(h.f, h.seq), "closing the engine took a carried flip away (%s)", h.line);
    flt_close(h.f);
}

/* The frame changed (a cell byte) between the flip and the write: the
 * watch ends, the flip is not present, and a later write of the exact
 * flipped frame does not bring it back. */
Test(carried_cache_flip, a_header_flip_whose_frame_changed_before_write_is_not_present, T_OPTS) {
    static hf h;
    hf_setup(&h);
    static uint8_t changed[PS];
    memcpy(changed, h.frame, PS);
    changed[PS - 1] ^= 0x01; /* the last cell's last byte */
    hook_write_block(h.f, h.data, h.block, changed);
    cr_assert(!dmg_has(h.f, h.seq), "a frame changed after the flip was written and the flip is present (%s)", h.line);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(h.f, s), 0, "damage present after a changed frame's write (%s)", h.line);
    hook_write_block(h.f, h.data, h.block, h.frame);
    cr_assert(!dmg_has(h.f, h.seq), "the watch outlived a write with other bytes (%s)", h.line);
    hf_teardown(&h);
}

/* The pool stamps checksum, LSN and block on every write: bytes [0, 20)
 * that differ from the frame's do not hide a carried flip. */
Test(carried_cache_flip, stamped_fields_do_not_hide_a_carried_flip, T_OPTS) {
    static hf h;
    hf_setup(&h);
    static uint8_t stamped[PS];
    memcpy(stamped, h.frame, PS);
    for (size_t i = 0; i < COVERED_LO; i++) stamped[i] ^= 0xa5;
    hook_write_block(h.f, h.data, h.block, stamped);
    cr_assert(dmg_has(h.f, h.seq), "a frame written with new stamped fields hid its carried flip (%s)", h.line);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(h.f, s), 1, "present: exactly the carried flip (%s)", h.line);
    hf_teardown(&h);
}
