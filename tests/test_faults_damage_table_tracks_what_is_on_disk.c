/*
 * test_faults_damage_table_tracks_what_is_on_disk.c -- the damage table
 * (faults.h D1-D5): a flip is present until a write covers it, the same
 * flip twice or undoing an in-flight flip cancels, a failed fsync that
 * drops data makes damage unknown, and a torn write that changed nothing is
 * not damage.
 *
 * Part of the faults suite (once test_faults.c); the helpers it shares
 * with the other test_faults_*.c files are in faults_helpers.h.
 */
#include "faults_helpers.h"

/* ---- the damage table (faults.h D1-D5) ----------------------------------------------------
 *
 * flt_damage_present lists the damage this process put into DIR/data that
 * nothing overwrote since; the oracle fails a run for present damage that
 * no report matched, so a "present" must be a fact on disk (gone may be
 * over-eager).  These tests hold the table against the disk and against
 * the writes the engine actually issued. */

/* A watcher around the fault library's hooks that holds the table against
 * each data-file write as it completes: a write covering the watched byte
 * must leave no entry present, any other write must leave the count as it
 * was (one, the watched flip).  Failures are counted here and asserted by
 * the test (never cr_assert inside the engine's I/O path).  It also keeps
 * the count of present entries seen at the start of the last data fsync. */
typedef struct dm {
    const eng_io_hooks *inner;
    eng_io_hooks hooks;
    flt_ctx *f;
    uint64_t watch;         /* byte offset in DIR/data; UINT64_MAX: none */
    size_t covering, other; /* completed data writes over the byte / elsewhere */
    size_t bad_covering, bad_other;
    size_t present_at_sync; /* before the last fsync of DIR/data */
    int syncs;
} dm;

static int dm_before(void *ctx, eng_io_op *op) {
    dm *w = ctx;
    if (op->kind == ENG_IO_SYNC && is_data(op)) {
        w->present_at_sync = flt_damage_present(w->f, NULL, 0);
        w->syncs++;
    }
    return w->inner->before(w->inner->ctx, op);
}

static void dm_after(void *ctx, eng_io_op *op) {
    dm *w = ctx;
    w->inner->after(w->inner->ctx, op);
    if (op->kind != ENG_IO_WRITE || !is_data(op) || op->result <= 0 || w->watch == UINT64_MAX) return;
    size_t n = flt_damage_present(w->f, NULL, 0);
    if (op->offset <= w->watch && w->watch < op->offset + (uint64_t)op->result) {
        w->covering++;
        w->bad_covering += n != 0;
    } else if (!w->covering) {
        w->other++;
        w->bad_other += n != 1;
    }
}

static dm *dm_new(const eng_io_hooks *inner, flt_ctx *f) {
    dm *w = calloc(1, sizeof *w);
    cr_assert(w != NULL);
    w->inner = inner;
    w->f = f;
    w->watch = UINT64_MAX;
    w->hooks = (eng_io_hooks){.ctx = w, .before = dm_before, .after = dm_after};
    return w;
}

/* The one ledger line of CLS (asserted), its byte offset in DIR/data in
 * *BYTE and its seq in *SEQ. */
static const char *dmg_flip_line(const lg *l, const char *cls, size_t k, uint64_t *byte, uint64_t *seq) {
    const char *line = lg_nth(l, cls, k);
    cr_assert_not_null(line, "no %s line %zu", cls, k);
    int64_t off = jnum(line, "offset"), bit = jnum(line, "bit"), s = jnum(line, "seq");
    cr_assert(off >= 0 && bit >= 0 && s >= 0, "%s", line);
    *byte = (uint64_t)off + (uint64_t)bit / 8;
    *seq = (uint64_t)s;
    return line;
}

/* D1: a page flip is in the table, under its ledger seq, from the moment
 * it is on disk; reads (a verify through the hooks) do not change that. */
Test(faults, a_page_flip_nothing_overwrote_is_present, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 400); /* closed: checkpointed, many blocks */
    cr_assert(tu_file_size(dir, "data") >= 8 * PS, "data file of %lld bytes", (long long)tu_file_size(dir, "data"));
    flt_options fo = fopts(run, dir, 32);
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(f, s), 0, "nothing injected yet");
    flt_op(f, 0);
    flt_tick(f, NULL);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1);
    uint64_t byte, seq;
    dmg_flip_line(&l, "bitflip_page", 0, &byte, &seq);
    cr_assert_eq(dmg_list(f, s), 1);
    cr_assert_eq(s[0], seq, "present seq %llu, the flip's is %llu", (unsigned long long)s[0], (unsigned long long)seq);
    /* Reading the damaged file through the hooks (the verify finds it)
     * writes nothing: still present. */
    flt_pause(f, 1);
    static tu_reports reps;
    tu_reports_init(&reps);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), &reps);
    uint64_t problems = 0;
    cr_assert_eq(eng_verify_dir(dir, &o, tu_collect, &reps, &problems), ENG_CORRUPTION);
    cr_assert_eq(dmg_list(f, s), 1);
    cr_assert_eq(s[0], seq);
    lg_free(&l);
    flt_close(f);
}

/* D2: the engine's own write of the flipped block takes the flip away
 * (the cache held the clean page: a full cache, loaded before the flip,
 * so the engine never reads the damage), and no write of another block
 * does.  The watcher checks the table at every completed data write. */
Test(faults, a_write_over_a_flipped_page_makes_it_gone, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 400);
    flt_options fo = fopts(run, dir, 5);
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    dm *w = dm_new(flt_hooks(f), f);
    eng_options o = eopts(ENG_IO_PSYNC, &w->hooks, NULL);
    o.cache_size = 8u << 20; /* every page stays resident */
    eng_db *db = tu_open(dir, &o);
    eng_buf b = {0};
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 400; i++) { /* load every page of the tree */
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_get(db, k, kl, &b), ENG_OK);
    }
    flt_thread_start(f, 0);
    flt_op(f, 0);
    flt_tick(f, NULL);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1);
    uint64_t byte, seq;
    const char *line = dmg_flip_line(&l, "bitflip_page", 0, &byte, &seq);
    cr_assert(dmg_has(f, seq));
    w->watch = byte;
    /* New values for every key, a checkpoint after each 100: the leaves
     * are written back one by one, the flipped one among them. */
    for (uint64_t i = 0; i < 1200 && !w->covering; i++) {
        kv(i % 400, 1 + (uint32_t)(i / 400), k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
        if (i % 100 == 99) cr_assert_eq(eng_checkpoint(db), ENG_OK);
    }
    cr_assert(w->other > 0, "no write of another block came first: nothing proven about them (%s)", line);
    cr_assert_eq(w->bad_other, 0, "%zu of %zu writes of other blocks changed the table (%s)", w->bad_other, w->other,
                 line);
    cr_assert(w->covering > 0, "block %lld was never written again (%s)", (long long)jnum(line, "block"), line);
    cr_assert_eq(w->bad_covering, 0, "the flip is still present after its block was written (%s)", line);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(f, s), 0);
    eng_buf_free(&b);
    tu_close(db);
    cr_assert_eq(dmg_list(f, s), 0);
    lg_free(&l);
    flt_close(f);
    free(w);
}

/* D3, and "present is a fact": ticks of bitflip_page on a two-page file
 * (an empty database) keep landing on the same few bits (one flip in
 * eight goes to a page's first or last byte: 32 bits here), so the same
 * flip comes twice, and cancels.  After every tick the table must equal a
 * model (a flip cancels the present one of the same byte and mask, else
 * joins), and the disk must differ from the original in exactly the XOR
 * of the present flips' masks: nothing present that is not on disk, and
 * nothing on disk the table forgot. */
Test(faults, the_same_flip_twice_cancels, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 0);
    char p[4096];
    size_t len0 = 0;
    uint8_t *orig = cu_read_file(tu_path(p, sizeof p, dir, "data"), &len0);
    cr_assert(len0 >= PS && len0 <= 4 * PS, "data file of %zu bytes", len0);
    flt_options fo = fopts(run, dir, 5);
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    enum { TICKS = 300 };
    struct {
        uint64_t seq, byte;
        uint8_t mask;
        int present;
    } m[TICKS];
    size_t nm = 0, cancels = 0, lines = 0;
    uint64_t s[DMG_CAP];
    uint8_t *x = malloc(len0);
    cr_assert(x != NULL);
    for (int t = 0; t < TICKS; t++) {
        flt_op(f, (uint64_t)t);
        flt_tick(f, NULL);
        lg l = lg_read(run);
        cr_assert_eq(l.n, lines + 1, "tick %d: one line per tick", t);
        lines = l.n;
        uint64_t byte, seq;
        const char *line = dmg_flip_line(&l, "bitflip_page", l.n - 1, &byte, &seq);
        uint8_t mask = (uint8_t)jmask(line);
        int cancelled = 0;
        for (size_t i = 0; i < nm && !cancelled; i++)
            if (m[i].present && m[i].byte == byte && m[i].mask == mask) m[i].present = 0, cancelled = 1;
        cancels += cancelled;
        m[nm].seq = seq, m[nm].byte = byte, m[nm].mask = mask, m[nm].present = !cancelled, nm++;
        lg_free(&l);
        /* The table against the model (seqs ascend with the ticks). */
        size_t n = dmg_list(f, s), k = 0;
        for (size_t i = 0; i < nm; i++) {
            if (!m[i].present) continue;
            cr_assert(k < n && s[k] == m[i].seq, "tick %d: flip seq %llu (byte %llu mask %02x) should be present", t,
                      (unsigned long long)m[i].seq, (unsigned long long)m[i].byte, m[i].mask);
            k++;
        }
        cr_assert_eq(k, n, "tick %d: %zu present, the model has %zu", t, n, k);
        /* The table against the disk. */
        memset(x, 0, len0);
        for (size_t i = 0; i < nm; i++)
            if (m[i].present) x[m[i].byte] ^= m[i].mask;
        size_t len1 = 0;
        uint8_t *now = cu_read_file(p, &len1);
        cr_assert_eq(len1, len0);
        for (size_t b = 0; b < len0; b++)
            cr_assert_eq(orig[b] ^ now[b], x[b], "tick %d: byte %zu differs by %02x, the present flips say %02x", t, b,
                         orig[b] ^ now[b], x[b]);
        free(now);
    }
    cr_assert(cancels >= 2, "only %zu flips repeated one present: nothing proven", cancels);
    check_counts(f, run);
    flt_close(f);
    free(x);
    free(orig);
}

/* A write of PAGE (PS bytes) at block 0 of DIR/data through the fault
 * library's hooks, as the engine's io.c issues one: before(), the
 * pwrite of whatever buffer before() left, after() with the result.
 * Returns the buffer that was written (ours or the library's copy; the
 * latter valid only until after() gave it back, so copied to OUT). */
static void hook_write_page(flt_ctx *f, const char *path, const uint8_t *page, uint8_t *out) {
    const eng_io_hooks *h = flt_hooks(f);
    uint8_t *buf = malloc(PS);
    cr_assert(buf != NULL);
    memcpy(buf, page, PS);
    eng_io_op op = {.kind = ENG_IO_WRITE, .file_id = 0, .path = path, .buf = buf, .offset = 0, .len = PS};
    cr_assert_eq(h->before(h->ctx, &op), 0);
    cr_assert(!op.skip && op.offset == 0 && op.len == PS);
    memcpy(out, op.buf, PS);
    int fd = open(path, O_WRONLY);
    cr_assert(fd >= 0);
    op.result = pwrite(fd, op.buf, PS, 0);
    close(fd);
    cr_assert_eq(op.result, (int64_t)PS);
    h->after(h->ctx, &op);
    free(buf);
}

/* The seed from FROM on whose first in-flight write flip lands in the
 * last byte of the page: the last byte of its last region, where a page
 * flip lands about one flip in 16 x 8, so a tick soon flips the same bit
 * back. */
static uint64_t seed_for_edge_inflight(uint64_t from, const char *path, const uint8_t *page) {
    const char *run = tu_tmpdir();
    uint8_t *w = malloc(PS);
    cr_assert(w != NULL);
    for (uint64_t seed = from; seed < from + 40000; seed++) {
        flt_options fo = fopts(run, NULL, seed);
        fo.one_in[FLT_BITFLIP_INFLIGHT] = 1;
        flt_ctx *f = fopen_ok(&fo);
        flt_thread_start(f, 0);
        const eng_io_hooks *h = flt_hooks(f);
        uint8_t *buf = malloc(PS);
        cr_assert(buf != NULL);
        memcpy(buf, page, PS);
        eng_io_op op = {.kind = ENG_IO_WRITE, .file_id = 0, .path = path, .buf = buf, .offset = 0, .len = PS};
        /* The page size is learned from this very write (learn_page_size
         * runs before the write faults). */
        cr_assert_eq(h->before(h->ctx, &op), 0);
        memcpy(w, op.buf, PS);
        op.result = -EIO; /* not issued: the entry is dropped (D1) */
        h->after(h->ctx, &op);
        free(buf);
        flt_close(f);
        size_t byte = 0;
        uint8_t mask = 0;
        cr_assert_eq(one_bit_diff(w, page, PS, &byte, &mask), 1);
        if (byte == PS - 1) {
            free(w);
            return seed;
        }
    }
    cr_assert_fail("no seed puts the in-flight flip on an edge byte");
    return 0;
}

/* D3 across injectors: a page written with an in-flight flip (damage
 * the write put on disk), then a bitflip_page tick of that very bit:
 * the byte is what the engine wrote again, the page is whole, so neither
 * flip may be present (a present one would fail an honest run: no check
 * can report what is not there).  Built on a one-page file written
 * through the hooks directly, no engine: the page size comes from the
 * write, the file's single block is the tick's only choice. */
Test(faults, a_flip_that_undoes_an_inflight_write_flip_cancels_it, T_OPTS) {
    const char *dir = tu_tmpdir();
    char path[4096];
    tu_path(path, sizeof path, dir, "data");
    uint8_t *page = malloc(PS), *written = malloc(PS);
    cr_assert(page && written);
    tu_fill(page, PS, 77);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, page, PS, 0), (ssize_t)PS);
    close(fd);
    uint64_t seed = seed_for_edge_inflight(1, path, page);

    const char *run = tu_tmpdir();
    flt_options fo = fopts(run, dir, seed);
    fo.one_in[FLT_BITFLIP_INFLIGHT] = 1;
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    flt_op(f, 0);
    hook_write_page(f, path, page, written);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1);
    uint64_t xbyte, xseq;
    const char *line = dmg_flip_line(&l, "bitflip_inflight", 0, &xbyte, &xseq);
    uint8_t xmask = (uint8_t)jmask(line);
    cr_assert(xbyte == PS - 1, "%s", line);
    cr_assert(dmg_has(f, xseq), "the written flip is on disk: present (%s)", line);
    lg_free(&l);
    /* Ticks until one flips the same bit back (1 in 128 each).  Every
     * other tick's flip stays: the model is the final XOR below. */
    uint64_t tseq = UINT64_MAX;
    for (int t = 1; t <= 5000 && tseq == UINT64_MAX; t++) {
        flt_op(f, (uint64_t)t);
        flt_tick(f, NULL);
        l = lg_read(run);
        uint64_t byte, seq;
        line = dmg_flip_line(&l, "bitflip_page", l.n - 2, &byte, &seq);
        if (byte == xbyte && jmask(line) == xmask) tseq = seq;
        lg_free(&l);
    }
    cr_assert(tseq != UINT64_MAX, "no tick flipped the written bit back");
    size_t len = 0;
    uint8_t *now = cu_read_file(path, &len);
    cr_assert_eq(len, (size_t)PS);
    cr_assert_eq((now[xbyte] ^ page[xbyte]) & xmask, 0, "the bit is the engine's again");
    cr_assert(!dmg_has(f, xseq), "in-flight flip seq %llu present, but a tick (seq %llu) undid it on disk",
              (unsigned long long)xseq, (unsigned long long)tseq);
    cr_assert(!dmg_has(f, tseq), "tick seq %llu present, but it only undid the in-flight flip",
              (unsigned long long)tseq);
    /* And the whole table against the disk: the flips in ledger order,
     * each cancelling a present one of the same byte and mask, leave
     * exactly the table, and XOR to exactly the page's difference. */
    l = lg_read(run);
    uint8_t x[PS] = {0};
    uint64_t *ps_ = calloc(l.n, sizeof *ps_), *pb = calloc(l.n, sizeof *pb);
    uint8_t *pm = calloc(l.n, 1);
    cr_assert(ps_ && pb && pm);
    size_t np = 0;
    for (size_t i = 0; i < l.n; i++) {
        uint64_t byte, seq;
        dmg_flip_line(&l, i ? "bitflip_page" : "bitflip_inflight", i ? i - 1 : 0, &byte, &seq);
        uint8_t mask = (uint8_t)jmask(i ? lg_nth(&l, "bitflip_page", i - 1) : l.lines[0]);
        size_t j = 0;
        while (j < np && !(pb[j] == byte && pm[j] == mask)) j++;
        if (j < np) {
            ps_[j] = ps_[np - 1], pb[j] = pb[np - 1], pm[j] = pm[np - 1], np--;
        } else
            ps_[np] = seq, pb[np] = byte, pm[np] = mask, np++;
    }
    uint64_t s[DMG_CAP];
    size_t n = dmg_list(f, s);
    cr_assert_eq(n, np, "%zu present, the flips leave %zu", n, np);
    for (size_t j = 0; j < np; j++) {
        cr_assert(dmg_has(f, ps_[j]), "seq %llu should be present", (unsigned long long)ps_[j]);
        x[pb[j]] ^= pm[j];
    }
    for (size_t b = 0; b < PS; b++)
        cr_assert_eq(page[b] ^ now[b], x[b], "byte %zu differs by %02x, the present flips say %02x", b,
                     page[b] ^ now[b], x[b]);
    free(ps_), free(pb), free(pm);
    lg_free(&l);
    free(now);
    check_counts(f, run);
    flt_close(f);
    free(page);
    free(written);
}

/* D4: a failed fsync of the data file rolls its unsynced writes back,
 * and what they had overwritten (a flip among it, maybe) comes back: the
 * table can no longer say what is on disk, so nothing stays present.
 * The flip is on a block the workload never writes (new keys after all
 * the old ones: only the right edge of the tree changes), so it is
 * present right up to the failing fsync (asserted: else this proves
 * nothing); drop_case's watcher (dw) fails exactly that fsync.  A flip
 * made after the drop is present again: the table still works. */
static void damage_drop_case(const char *point, uint64_t seed_from) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, seed_for_sync_route(seed_from, point));
    fo.one_in[FLT_SYNC_ERROR] = 1;
    fo.one_in[FLT_BITFLIP_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    cr_assert_not_null(flt_get_journal(f), "sync_error opens the journal");
    flt_pause(f, 1);
    flt_thread_start(f, 0);
    dw *w = calloc(1, sizeof *w);
    cr_assert(w != NULL);
    w->inner = flt_hooks(f);
    w->f = f;
    w->hooks = (eng_io_hooks){.ctx = w, .before = dw_before, .after = dw_after};
    dm *d = dm_new(&w->hooks, f);
    eng_options o = eopts(ENG_IO_PSYNC, &d->hooks, NULL);
    o.sync_mode = ENG_SYNC_OFF;
    eng_db *db = tu_open(dir, &o);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 300; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    flt_pause(f, 0); /* only the tick: sync_error acts at fsyncs, and none runs here */
    flt_op(f, 0);
    flt_tick(f, NULL);
    flt_pause(f, 1);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 1);
    uint64_t byte, seq;
    const char *line = dmg_flip_line(&l, "bitflip_page", 0, &byte, &seq);
    cr_assert(dmg_has(f, seq), "%s", line);
    for (uint64_t i = 300; i < 700; i++) { /* new keys, all after the old ones */
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    cr_assert(w->nw > 0, "no page was written back before the checkpoint: nothing to drop");
    cr_assert_eq(eng_sync(db), ENG_OK);
    w->armed = 1;
    flt_op(f, 1);
    cr_assert_eq(eng_checkpoint(db), ENG_IOERR);
    cr_assert(w->failed, "the data file's fsync was not failed");
    cr_assert_eq(d->present_at_sync, 1, "the flip was not present when the fsync failed (%s)", line);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(f, s), 0, "present after the drop: seq %llu", (unsigned long long)s[0]);
    lg_free(&l);
    /* Later damage is known again. */
    flt_pause(f, 0);
    flt_op(f, 2);
    flt_tick(f, NULL);
    flt_pause(f, 1);
    l = lg_read(run);
    dmg_flip_line(&l, "bitflip_page", 1, &byte, &seq);
    cr_assert_eq(dmg_list(f, s), 1);
    cr_assert_eq(s[0], seq);
    lg_free(&l);
    cr_assert_eq(eng_close(db), ENG_POISONED);
    check_counts(f, run);
    flt_close(f);
    free(w->pre);
    free(w->post);
    free(w);
    free(d);
}

Test(faults, a_failed_fsync_that_drops_dirty_data_makes_damage_unknown, T_OPTS) { damage_drop_case("hook/sync", 47); }

/* The same through the engine's own point engine/io/fsync (the drop in
 * after(SYNC), the other half of sync_error's firings). */
Test(faults, a_failed_fsync_at_engine_fsync_point_makes_damage_unknown, T_OPTS) {
    damage_drop_case("engine/io/fsync", 48);
}

/* D5: a flip in the buffer of a completed read is damage the engine took
 * in, not damage on disk: no write can take it back, so it stays present
 * for good, even after the engine rewrote that very block (read clean
 * once the library is paused).  Its page check refused it (the report
 * names the block), which is what the oracle will match it with. */
Test(faults, a_flipped_read_buffer_is_present_for_good, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 600);
    flt_options fo = fopts(run, dir, 21);
    fo.one_in[FLT_BITFLIP_INFLIGHT] = 1; /* every read of the data file */
    flt_ctx *f = fopen_ok(&fo);
    dm *w = dm_new(flt_hooks(f), f);
    static tu_reports reps;
    tu_reports_init(&reps);
    eng_options o = eopts(ENG_IO_PSYNC, &w->hooks, &reps);
    flt_pause(f, 1); /* a clean open */
    eng_db *db = tu_open(dir, &o);
    flt_thread_start(f, 0);
    eng_buf b = {0};
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    /* A key whose leaf the 16-frame cache does not hold: its read is
     * flipped, the get fails. */
    flt_pause(f, 0);
    flt_op(f, 0);
    kv(300, 0, k, &kl, v, &vl);
    int rc = eng_get(db, k, kl, &b);
    flt_pause(f, 1);
    cr_assert_eq(rc, ENG_CORRUPTION, "get: %s", eng_strerror(rc));
    lg l = lg_read(run);
    size_t n = lg_count(&l, "bitflip_inflight");
    cr_assert(n >= 1);
    uint64_t byte, seq, s[DMG_CAP];
    const char *line = NULL;
    for (size_t i = 0; i < n; i++) {
        line = dmg_flip_line(&l, "bitflip_inflight", i, &byte, &seq);
        cr_assert(line_is(line, "point", "hook/read"), "%s", line);
        cr_assert(dmg_has(f, seq), "read flip not present: %s", line);
    }
    cr_assert_eq(dmg_list(f, s), n, "present: exactly the read flips");
    char buf[2048];
    int64_t block = jnum(line, "block");
    cr_assert(tu_reports_has(&reps, ENG_LAYER_PAGE_CHECKSUM, "data", block),
              "no page_checksum report for block %lld (%s); reports:\n%s", (long long)block, line,
              tu_reports_str(&reps, buf, sizeof buf));
    /* The engine writes that block again (new values for every key, a
     * checkpoint): D2 does not apply to what was never on disk. */
    w->watch = (uint64_t)jnum(line, "offset");
    for (uint64_t i = 0; i < 600; i++) {
        kv(i, 1, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    cr_assert(w->covering > 0, "block %lld was never written again (%s)", (long long)block, line);
    cr_assert_eq(dmg_list(f, s), n, "a write took a read flip away");
    cr_assert(dmg_has(f, seq));
    eng_buf_free(&b);
    tu_close(db);
    cr_assert_eq(dmg_list(f, s), n);
    check_counts(f, run);
    lg_free(&l);
    flt_close(f);
    free(w);
}

/* A watcher for torn writes: before the library's before() it keeps the
 * engine's page and the block's old bytes; when the write was torn it
 * takes the line's seq, and once the write completed it holds the table
 * against the disk's truth: present exactly when the unwritten tail's
 * old bytes differ from the new page's (an old block wholly inside the
 * file; past the end the library makes no claim, which is allowed). */
typedef struct tt {
    const eng_io_hooks *inner;
    eng_io_hooks hooks;
    flt_ctx *f;
    const char *run;
    const eng_io_op *op;
    uint64_t seq;
    int differs;
    size_t same, diff, wrong;
    uint8_t page[PS], old[PS];
} tt;

static void tt_last_seq(void *ctx, const char *line) { *(int64_t *)ctx = jnum(line, "seq"); }

static int tt_before(void *ctx, eng_io_op *op) {
    tt *w = ctx;
    int data = is_data_write(op);
    struct stat st;
    int inside = 0;
    if (data) {
        memcpy(w->page, op->buf, PS);
        read_block(op->path, op->offset, w->old);
        inside = stat(op->path, &st) == 0 && op->offset + PS <= (uint64_t)st.st_size;
    }
    uint64_t off0 = op->offset;
    int rc = w->inner->before(w->inner->ctx, op);
    if (rc == 0 && data && op->len < PS && op->offset == off0) {
        int64_t seq = -1;
        flt_ledger_read(w->run, tt_last_seq, &seq);
        w->op = op;
        w->seq = (uint64_t)seq;
        w->differs = inside && memcmp(w->old + op->len, w->page + op->len, PS - op->len) != 0;
    }
    return rc;
}

static void tt_after(void *ctx, eng_io_op *op) {
    tt *w = ctx;
    w->inner->after(w->inner->ctx, op);
    if (op != w->op) return;
    w->op = NULL;
    if (op->result <= 0) return;
    uint64_t s[DMG_CAP];
    size_t n = flt_damage_present(w->f, s, DMG_CAP);
    int present = 0;
    for (size_t i = 0; i < n && i < DMG_CAP; i++) present |= s[i] == w->seq;
    w->wrong += present != w->differs;
    if (w->differs)
        w->diff++;
    else
        w->same++;
}

/* A torn write is damage only when what it left of the old page differs
 * from the new page: the tail of a page whose changes all fell in its
 * written head (cells are added downwards from the end, so the oldest,
 * last bytes often stay) tore nothing, and must not be present. */
Test(faults, a_torn_write_that_changed_nothing_is_not_damage, T_OPTS) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    populate(dir, ENG_IO_PSYNC, 200);
    flt_options fo = fopts(run, dir, 11);
    fo.one_in[FLT_TORN_WRITE] = 3;
    flt_ctx *f = fopen_ok(&fo);
    tt *w = calloc(1, sizeof *w);
    cr_assert(w != NULL);
    w->inner = flt_hooks(f);
    w->f = f;
    w->run = run;
    w->hooks = (eng_io_hooks){.ctx = w, .before = tt_before, .after = tt_after};
    eng_options o = eopts(ENG_IO_PSYNC, &w->hooks, NULL);
    o.cache_size = 8u << 20; /* nothing evicted: a torn page is never read back */
    flt_pause(f, 1);
    eng_db *db = tu_open(dir, &o);
    flt_pause(f, 0);
    flt_thread_start(f, 0);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 3000 && (w->same < 2 || w->diff < 2); i++) {
        flt_op(f, i);
        kv(200 + i, 0, k, &kl, v, &vl);
        int rc = (i % 25 == 24) ? eng_checkpoint(db) : eng_put(db, k, kl, v, vl, NULL);
        if (rc != ENG_OK) break;
    }
    flt_pause(f, 1);
    eng_close(db);
    cr_assert_eq(w->wrong, 0, "%zu torn writes with the table wrong (tails alike %zu, differing %zu)", w->wrong,
                 w->same, w->diff);
    cr_assert(w->same >= 1, "no torn write left a tail like the new page's: nothing proven");
    cr_assert(w->diff >= 1, "no torn write left a differing tail");
    check_counts(f, run);
    flt_close(f);
    free(w);
}

/* D8: a tick's flip inside a zeroed page leaves a page that is not all
 * zero, which the zero-page rule cannot see and need not: the zeroing
 * stops counting as present, the flip counts (so an engine that passed
 * the block unread would still fail V4b on the flip). */
Test(faults, a_flip_in_a_zeroed_page_takes_the_zeroing_and_stays_itself, T_OPTS) {
    const char *dir = tu_tmpdir(), *run = tu_tmpdir();
    char path[4096];
    tu_path(path, sizeof path, dir, "data");
    uint8_t *page = malloc(PS), *written = malloc(PS);
    cr_assert(page && written);
    tu_fill(page, PS, 78);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, page, PS, 0), (ssize_t)PS);
    close(fd);
    flt_options fo = fopts(run, dir, 5);
    fo.one_in[FLT_ZERO_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    flt_op(f, 0);
    hook_write_page(f, path, page, written);
    uint8_t zero[PS] = {0};
    cr_assert(!memcmp(written, zero, PS), "the write was not zeroed");
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(f, s), 1, "the zeroed page is present");
    uint64_t zseq = s[0];
    flt_flip_page_at(f, 0, 8 * 100 + 3);
    size_t n = dmg_list(f, s);
    cr_assert_eq(n, 1, "%zu entries present after the flip", n);
    cr_assert_neq(s[0], zseq, "the zeroing still counts as present in a page that is not all zero");
    lg l = lg_read(run);
    uint64_t byte, seq;
    dmg_flip_line(&l, "bitflip_page", 0, &byte, &seq);
    cr_assert_eq(s[0], seq, "the flip's seq %llu is not the one present", (unsigned long long)seq);
    lg_free(&l);
    flt_close(f);
    free(page);
    free(written);
}

/* D9: a block zeroed in place replaces the damage that was in it. */
Test(faults, a_block_zeroed_in_place_takes_the_damage_that_was_in_it, T_OPTS) {
    const char *dir = tu_tmpdir(), *run = tu_tmpdir();
    char path[4096];
    uint8_t *page = malloc(PS), ctl[CONTROL_SIZE] = {0};
    cr_assert(page);
    tu_fill(page, PS, 91);
    int fd = open(tu_path(path, sizeof path, dir, "data"), O_CREAT | O_WRONLY, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, page, PS, 0), (ssize_t)PS); /* one block: the zeroing can only land there */
    close(fd);
    fmt_put32(ctl + CT_PAGE_SIZE_OFF, PS); /* where the library reads the page size from */
    fd = open(tu_path(path, sizeof path, dir, "control"), O_CREAT | O_WRONLY, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(pwrite(fd, ctl, sizeof ctl, 0), (ssize_t)sizeof ctl);
    close(fd);
    flt_options fo = fopts(run, dir, 9);
    fo.one_in[FLT_ZERO_PAGE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    flt_op(f, 0);
    flt_flip_page_at(f, 0, 8 * 200 + 1);
    uint64_t s[DMG_CAP];
    cr_assert_eq(dmg_list(f, s), 1, "the flip is present");
    uint64_t flip = s[0];
    flt_op(f, 1);
    flt_tick(f, NULL);
    lg l = lg_read(run);
    cr_assert_eq(l.n, 2, "one flip, one zeroed block");
    char point[32];
    cr_assert_str_eq(jstr(l.lines[1], "point", point, sizeof point), "tick/data");
    uint64_t zero = (uint64_t)jnum(l.lines[1], "seq");
    lg_free(&l);
    size_t n = dmg_list(f, s);
    cr_assert_eq(n, 1, "%zu entries present after the zeroing", n);
    cr_assert_eq(s[0], zero, "the flip (seq %llu) is still present in a block of zeros", (unsigned long long)flip);
    flt_close(f);
    free(page);
}
