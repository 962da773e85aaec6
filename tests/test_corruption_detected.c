/*
 * test_corruption_detected.c -- damage to the data file is always detected
 * and reported at the right place, and wrong data is never returned.
 *
 * A database of 3000 keys (some with overflow values) is built and closed;
 * its files are the pristine copy.  Each round restores the pristine files
 * into a work dir, damages the data file with the database closed, reopens
 * it with a 16-page cache and reads every key with eng_get and with forward
 * and backward iterator scans.  Every round asserts:
 *   W  no call returns a value (or key sequence) that differs from the model;
 *   D  at least one call returns ENG_CORRUPTION, every such call delivered a
 *      report, and a report names the expected layer, file "data" and the
 *      damaged block;
 *   L  keys whose leaf and overflow pages are intact still read back
 *      (damage to a leaf or overflow page stays local) and keys on the
 *      damaged page are reported, never silently missing;
 *   V  eng_verify (or eng_verify_dir when open itself failed) reports the
 *      block.
 * Damage kinds: single bit flips anywhere in meta, internal, leaf and
 * overflow pages (header and checksum field included), a page copied over
 * another (misdirected write), a zeroed page below the high-water mark,
 * torn pages (half new, half old or zeros), and a truncated data file.
 * Every test runs with both I/O backends.
 */
#include "testutil.h"

#include "page.h"

#define T_TIMEOUT .timeout = 300, .fini = tu_cleanup

#define NKEYS       3000
#define CACHE_PAGES 16

/* ---- the fixture: a pristine database and what lives in each block ---- */

typedef struct fixture {
    const char *pristine; /* closed database, never opened after the build */
    const char *work;     /* damaged copy of the round */
    int backend;
    uint32_t ps;
    tu_model m;
    uint64_t nblocks;
    uint8_t *type;          /* [nblocks] ph_type of each block */
    int32_t *ovfl_owner;    /* [nblocks] key index owning an overflow page, or -1 */
    int64_t leaf_of[NKEYS]; /* leaf block holding key i */
    tu_reports rep;         /* the handle's corruption callback */
    tu_reports vrep;        /* eng_verify's callback */
} fixture;

static fixture F; /* one per test process (Criterion forks per test) */

static size_t key_of(char *buf, int i) { return tu_key(buf, (uint64_t)i); }

static int key_index(const uint8_t *k, size_t kl) { return (int)tu_key_index(k, kl, NKEYS); }

/* Load NKEYS keys; every 100th value spans several overflow pages. */
static void load(const char *dir, int backend, uint32_t ps, tu_model *m, uint64_t seed) {
    eng_options o = tu_opts(backend, ps, 0, NULL);
    eng_db *db = tu_open(dir, &o);
    tu_rng r = {seed};
    static uint8_t v[48000];
    for (int i = 0; i < NKEYS; i++) {
        /* insert in a scrambled order so leaves split all over the tree */
        int k = (int)(((uint64_t)i * 1237) % NKEYS);
        char kb[16];
        size_t kl = key_of(kb, k);
        size_t vl = k % 100 == 7 ? tu_range(&r, 10000, 40000) : tu_range(&r, 10, 200);
        tu_fill(v, vl, seed ^ ((uint64_t)k << 20));
        cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
        tu_model_put(m, kb, kl, v, vl);
    }
    tu_close(db);
}

/* Map every block: type, and for leaves/overflow pages which keys they
 * hold (from the pristine raw pages, decoded with the documented layout). */
static void map_blocks(fixture *f) {
    f->nblocks = tu_data_nblocks(f->pristine, f->ps);
    free(f->type);
    free(f->ovfl_owner);
    f->type = calloc(f->nblocks, 1);
    f->ovfl_owner = malloc(f->nblocks * sizeof *f->ovfl_owner);
    cr_assert(f->type && f->ovfl_owner);
    for (uint64_t b = 0; b < f->nblocks; b++) f->ovfl_owner[b] = -1;
    for (int i = 0; i < NKEYS; i++) f->leaf_of[i] = -1;
    uint8_t *p = malloc(f->ps), *q = malloc(f->ps);
    cr_assert(p && q);
    for (uint64_t b = 0; b < f->nblocks; b++) {
        tu_read_page(f->pristine, b, f->ps, p);
        f->type[b] = ph_get_type(p);
        if (f->type[b] != PAGE_LEAF) continue;
        unsigned n = ph_get_nslots(p);
        for (unsigned s = 0; s < n; s++) {
            const uint8_t *c = p + page_slot(p, s);
            uint16_t kl = rd16(c);
            uint8_t fl = c[2];
            int ki = key_index(c + LEAF_CELL_HDR, kl);
            cr_assert(ki >= 0, "leaf %llu slot %u: unexpected key", (unsigned long long)b, s);
            f->leaf_of[ki] = (int64_t)b;
            if (!(fl & CELL_OVERFLOW)) continue;
            uint32_t ob = rd32(c + LEAF_CELL_HDR + kl);
            for (uint64_t steps = 0; ob != 0 && steps < f->nblocks; steps++) {
                cr_assert(ob < f->nblocks, "overflow chain leaves the file");
                f->ovfl_owner[ob] = ki;
                tu_read_page(f->pristine, ob, f->ps, q);
                cr_assert_eq(ph_get_type(q), PAGE_OVERFLOW, "block %u in a chain is not an overflow page", ob);
                ob = ph_get_next(q);
            }
        }
    }
    for (int i = 0; i < NKEYS; i++) cr_assert(f->leaf_of[i] >= 0, "key %d is on no leaf of the pristine file", i);
    free(p);
    free(q);
}

static void fixture_build(int backend, uint32_t ps, uint64_t seed) {
    fixture *f = &F;
    memset(f, 0, sizeof *f);
    f->backend = backend;
    f->ps = ps;
    f->pristine = tu_tmpdir();
    f->work = tu_tmpdir();
    tu_reports_init(&f->rep);
    tu_reports_init(&f->vrep);
    load(f->pristine, backend, ps, &f->m, seed);
    map_blocks(f);
}

static uint64_t blocks_of_type(const fixture *f, int type, uint64_t *out, uint64_t cap) {
    uint64_t n = 0;
    for (uint64_t b = 0; b < f->nblocks && n < cap; b++)
        if (f->type[b] == type) out[n++] = b;
    return n;
}

/* Which keys a damaged BLOCK makes unreadable: 1 = must fail, 0 = must read
 * back, -1 = either (the block is on every path: meta, internal). */
static int key_fate(const fixture *f, int i, int64_t block) {
    if (block < 0) return -1;
    int t = f->type[block];
    if (t == PAGE_LEAF) return f->leaf_of[i] == block;
    if (t == PAGE_OVERFLOW) return f->ovfl_owner[block] == i;
    return -1;
}

/* ---- one round: reopen, read everything, check W D L V ---- */

typedef struct expect {
    int layer;        /* expected layer, or -1 for any */
    int64_t block;    /* the damaged block, or -1 if not known exactly */
    int local;        /* check L (fate of each key) */
    const char *what; /* round description for messages */
} expect;

static int check_status(int rc, size_t before, const char *what, const char *call) {
    if (rc == ENG_CORRUPTION) {
        cr_assert_gt(F.rep.total, before, "%s: %s returned corruption without a report", what, call);
        return 1;
    }
    return 0;
}

static void scan(eng_db *db, int backward, int64_t block, int *ncorrupt, const char *what) {
    eng_iter *it;
    eng_iter_options io = {0};
    cr_assert_eq(eng_iter_open(db, &io, &it), ENG_OK, "%s: iter_open", what);
    const tu_model *m = &F.m;
    long i = backward ? (long)m->n - 1 : 0;
    size_t before = F.rep.total;
    int rc = backward ? eng_iter_last(it) : eng_iter_first(it);
    while (rc == ENG_OK) {
        cr_assert(i >= 0 && i < (long)m->n, "%s: %s scan returned more keys than exist", what,
                  backward ? "bwd" : "fwd");
        size_t kl, vl;
        const void *k = eng_iter_key(it, &kl), *v = eng_iter_value(it, &vl);
        /* W: the scan yields exactly the model's next key: nothing skipped,
         * nothing invented, value exact */
        cr_assert(tu_bytes_eq(k, kl, m->a[i].k, m->a[i].kl), "%s: %s scan: wrong key at position %ld", what,
                  backward ? "bwd" : "fwd", i);
        cr_assert(tu_bytes_eq(v, vl, m->a[i].v, m->a[i].vl),
                  "%s: %s scan: WRONG VALUE for key %ld (len %zu, expected %zu)", what, backward ? "bwd" : "fwd", i, vl,
                  m->a[i].vl);
        /* L: a key whose pages are damaged is not returned */
        cr_assert_neq(key_fate(&F, (int)i, block), 1, "%s: scan returned key %ld from a damaged page", what, i);
        i += backward ? -1 : 1;
        before = F.rep.total;
        rc = backward ? eng_iter_prev(it) : eng_iter_next(it);
    }
    if (rc == ENG_NOTFOUND) {
        cr_assert_eq(i, backward ? -1 : (long)m->n, "%s: %s scan ended early at %ld without an error", what,
                     backward ? "bwd" : "fwd", i);
    } else {
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: scan: %s", what, eng_strerror(rc));
        check_status(rc, before, what, "iterator move");
        (*ncorrupt)++;
    }
    eng_iter_close(it);
}

static void check_round(const expect *e) {
    fixture *f = &F;
    char rs[4096];
    tu_reports_reset(&f->rep);
    tu_reports_reset(&f->vrep);
    eng_options o = tu_opts(f->backend, 0, 0, &f->rep);
    o.cache_size = CACHE_PAGES * (size_t)f->ps;
    o.create_if_missing = 0;
    eng_db *db = NULL;
    int rc = eng_open(f->work, &o, &db);
    if (rc != ENG_OK) {
        /* damage found while opening (meta page, or a page read at open) */
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: eng_open: %s", e->what, eng_strerror(rc));
        cr_assert_null(db);
        cr_assert_gt(f->rep.total, 0, "%s: open returned corruption without a report", e->what);
        cr_assert(tu_reports_has(&f->rep, e->layer, "data", e->block),
                  "%s: open failed but no report for layer %s block %lld:\n%s", e->what, eng_layer_name(e->layer),
                  (long long)e->block, tu_reports_str(&f->rep, rs, sizeof rs));
        uint64_t probs = 0;
        rc = eng_verify_dir(f->work, &o, tu_collect, &f->vrep, &probs);
        cr_assert_eq(rc, ENG_CORRUPTION, "%s: eng_verify_dir: %s", e->what, eng_strerror(rc));
        cr_assert_geq(probs, 1);
        cr_assert(tu_reports_has(&f->vrep, e->layer, "data", e->block),
                  "%s: eng_verify_dir did not report block %lld:\n%s", e->what, (long long)e->block,
                  tu_reports_str(&f->vrep, rs, sizeof rs));
        return;
    }

    int ncorrupt = 0;
    eng_buf b = {0};
    for (size_t i = 0; i < f->m.n; i++) {
        const tu_kv *kv = &f->m.a[i];
        size_t before = f->rep.total;
        rc = eng_get(db, kv->k, kv->kl, &b);
        int fate = e->local ? key_fate(f, (int)i, e->block) : -1;
        if (rc == ENG_OK) {
            /* W */
            cr_assert(tu_bytes_eq(b.data, b.len, kv->v, kv->vl),
                      "%s: get of key %zu returned a WRONG VALUE (len %zu, expected %zu)", e->what, i, b.len, kv->vl);
            cr_assert_neq(fate, 1, "%s: get of key %zu on the damaged block %lld succeeded", e->what, i,
                          (long long)e->block);
        } else {
            cr_assert_eq(rc, ENG_CORRUPTION, "%s: get of key %zu: %s", e->what, i, eng_strerror(rc));
            check_status(rc, before, e->what, "eng_get");
            cr_assert_neq(fate, 0, "%s: get of intact key %zu (leaf %lld) failed", e->what, i,
                          (long long)f->leaf_of[i]);
            ncorrupt++;
        }
    }
    /* keys that do not exist: never "found" */
    for (int i = 0; i < 40; i++) {
        char k[16];
        size_t kl = key_of(k, NKEYS + i * 13);
        if (i % 4 == 0) kl = 5; /* a prefix of real keys */
        size_t before = f->rep.total;
        rc = eng_get(db, k, kl, &b);
        if (rc != ENG_NOTFOUND) {
            cr_assert_eq(rc, ENG_CORRUPTION, "%s: get of absent key: %s", e->what, eng_strerror(rc));
            check_status(rc, before, e->what, "eng_get(absent)");
            ncorrupt++;
        }
    }
    eng_buf_free(&b);
    scan(db, 0, e->local ? e->block : -1, &ncorrupt, e->what);
    scan(db, 1, e->local ? e->block : -1, &ncorrupt, e->what);

    /* D */
    cr_assert_geq(ncorrupt, 1, "%s: no call returned corruption", e->what);
    cr_assert(tu_reports_has(&f->rep, e->layer, "data", e->block),
              "%s: no report with layer %s, file data, block %lld; got:\n%s", e->what,
              e->layer >= 0 ? eng_layer_name(e->layer) : "any", (long long)e->block,
              tu_reports_str(&f->rep, rs, sizeof rs));
    if (e->block >= 0) {
        /* nothing else is accused */
        for (size_t i = 0; i < f->rep.n; i++)
            cr_assert(f->rep.r[i].block == e->block && !strcmp(f->rep.r[i].file, "data"),
                      "%s: a report names file %s block %lld, but only block %lld was damaged:\n%s", e->what,
                      f->rep.r[i].file, (long long)f->rep.r[i].block, (long long)e->block,
                      tu_reports_str(&f->rep, rs, sizeof rs));
    }
    eng_corruption last;
    cr_assert(eng_last_corruption(db, &last), "%s: eng_last_corruption has none", e->what);
    if (e->block >= 0)
        cr_assert_eq(last.block, e->block, "%s: last corruption names block %lld", e->what, (long long)last.block);
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    if (e->layer >= 0)
        cr_assert_gt(st.corruption[e->layer], 0, "%s: stats count no %s reports", e->what, eng_layer_name(e->layer));

    /* V */
    uint64_t probs = 0;
    rc = eng_verify(db, tu_collect, &f->vrep, &probs);
    cr_assert_eq(rc, ENG_CORRUPTION, "%s: eng_verify: %s", e->what, eng_strerror(rc));
    cr_assert_geq(probs, 1);
    cr_assert(tu_reports_has(&f->vrep, e->layer, "data", e->block), "%s: eng_verify did not report block %lld:\n%s",
              e->what, (long long)e->block, tu_reports_str(&f->vrep, rs, sizeof rs));

    rc = eng_close(db);
    cr_assert_eq(rc, ENG_OK, "%s: eng_close after read-only use: %s", e->what, eng_strerror(rc));
}

/* The pristine copy itself is clean (guards the test's own setup). */
static void check_pristine_clean(void) {
    tu_copy_dir(F.pristine, F.work);
    eng_options o = tu_opts(F.backend, 0, 0, &F.rep);
    o.cache_size = CACHE_PAGES * (size_t)F.ps;
    eng_db *db = tu_open(F.work, &o);
    tu_check_gets(db, &F.m, "pristine");
    tu_check_scan(db, &F.m, "pristine");
    uint64_t probs = 1;
    cr_assert_eq(eng_verify(db, tu_collect, &F.vrep, &probs), ENG_OK, "pristine copy does not verify");
    cr_assert_eq(probs, 0);
    cr_assert_eq(F.rep.total, 0);
    tu_close(db);
}

/* ---- bit flips ---- */

TU_BACKEND_TEST(corruption, bit_flip_in_any_page_is_detected_at_its_block, T_TIMEOUT) {
    const uint64_t seed = 0xb17f11b5ull + (uint64_t)*backend;
    fixture_build(*backend, 8192, seed);
    check_pristine_clean();
    static uint64_t by_type[PAGE_TYPE_MAX + 1][4096];
    uint64_t count[PAGE_TYPE_MAX + 1] = {0};
    const int types[] = {PAGE_META, PAGE_INTERNAL, PAGE_LEAF, PAGE_OVERFLOW};
    for (int t = 0; t < 4; t++) count[types[t]] = blocks_of_type(&F, types[t], by_type[types[t]], 4096);
    for (int t = 0; t < 4; t++)
        cr_assert_gt(count[types[t]], 0, "the fixture has no %s page", page_type_name(types[t]));

    tu_rng r = {seed};
    uint8_t *page = malloc(F.ps);
    const int rounds = 110;
    for (int round = 0; round < rounds; round++) {
        /* meta and internal pages are few: give them a fair share */
        int t = types[round % 4];
        uint64_t block = by_type[t][tu_below(&r, count[t])];
        uint64_t off;
        uint64_t where = tu_below(&r, 8);
        if (where == 0)
            off = tu_below(&r, 8); /* the checksum field itself */
        else if (where <= 2)
            off = tu_below(&r, PAGE_HDR); /* the header */
        else
            off = tu_below(&r, F.ps); /* anywhere */
        int bit = (int)tu_below(&r, 8);
        char what[160];
        snprintf(what, sizeof what, "[%s seed %#llx round %d] bit %d of byte %llu in %s block %llu",
                 tu_backend_name(*backend), (unsigned long long)seed, round, bit, (unsigned long long)off,
                 page_type_name(t), (unsigned long long)block);
        tu_copy_dir(F.pristine, F.work);
        tu_read_page(F.work, block, F.ps, page);
        page[off] ^= (uint8_t)(1u << bit);
        tu_write_page(F.work, block, F.ps, page);
        expect e = {ENG_LAYER_PAGE_CHECKSUM, (int64_t)block, 1, what};
        check_round(&e);
    }
    free(page);
}

/* ---- misdirected write ---- */

TU_BACKEND_TEST(corruption, page_copied_over_another_is_detected_at_target, T_TIMEOUT) {
    const uint64_t seed = 0x3d1ec7edull + (uint64_t)*backend;
    fixture_build(*backend, 8192, seed);
    static uint64_t leaves[4096], ovfl[4096];
    uint64_t nl = blocks_of_type(&F, PAGE_LEAF, leaves, 4096);
    uint64_t no = blocks_of_type(&F, PAGE_OVERFLOW, ovfl, 4096);
    cr_assert_geq(nl, 2);
    cr_assert_geq(no, 2);
    tu_rng r = {seed};
    uint8_t *page = malloc(F.ps);
    for (int round = 0; round < 12; round++) {
        /* leaves over leaves; the last rounds overflow over overflow */
        int ov = round >= 9;
        uint64_t *set = ov ? ovfl : leaves, n = ov ? no : nl;
        uint64_t a = set[tu_below(&r, n)], bb;
        do bb = set[tu_below(&r, n)];
        while (bb == a);
        if (ov && F.ovfl_owner[a] == F.ovfl_owner[bb]) continue;
        char what[160];
        snprintf(what, sizeof what, "[%s round %d] %s block %llu copied over block %llu", tu_backend_name(*backend),
                 round, ov ? "overflow" : "leaf", (unsigned long long)a, (unsigned long long)bb);
        tu_copy_dir(F.pristine, F.work);
        tu_read_page(F.work, a, F.ps, page);
        tu_write_page(F.work, bb, F.ps, page);
        expect e = {ENG_LAYER_PAGE_CHECKSUM, (int64_t)bb, 1, what};
        check_round(&e);
    }
    free(page);
}

/* ---- zeroed page below the high-water mark ---- */

TU_BACKEND_TEST(corruption, zeroed_page_below_high_water_mark_is_detected, T_TIMEOUT) {
    const uint64_t seed = 0x2e20ull + (uint64_t)*backend;
    fixture_build(*backend, 8192, seed);
    tu_rng r = {seed};
    uint8_t *zero = calloc(1, F.ps);
    const int types[] = {PAGE_LEAF, PAGE_OVERFLOW, PAGE_INTERNAL, PAGE_META, PAGE_LEAF, PAGE_LEAF};
    static uint64_t set[4096];
    for (int round = 0; round < 6; round++) {
        uint64_t n = blocks_of_type(&F, types[round], set, 4096);
        cr_assert_gt(n, 0);
        uint64_t block = round == 5 ? set[n - 1] : set[tu_below(&r, n)]; /* incl. the highest leaf */
        char what[160];
        snprintf(what, sizeof what, "[%s] zeroed %s block %llu of %llu", tu_backend_name(*backend),
                 page_type_name(types[round]), (unsigned long long)block, (unsigned long long)F.nblocks);
        tu_copy_dir(F.pristine, F.work);
        tu_write_page(F.work, block, F.ps, zero);
        expect e = {ENG_LAYER_ZERO_PAGE, (int64_t)block, 1, what};
        check_round(&e);
    }
    free(zero);
}

/* ---- torn pages ---- */

TU_BACKEND_TEST(corruption, torn_page_half_old_or_zero_is_detected, T_TIMEOUT) {
    const uint64_t seed = 0x7042ull + (uint64_t)*backend;
    fixture_build(*backend, 8192, seed);
    /* keep the old version, then rewrite many values in place (same tree
     * shape, new bytes), so most pages have a distinct old version */
    const char *old = tu_tmpdir();
    tu_copy_dir(F.pristine, old);
    eng_options o = tu_opts(*backend, 0, 0, NULL);
    eng_db *db = tu_open(F.pristine, &o);
    tu_rng r = {seed};
    for (size_t i = 0; i < F.m.n; i += 2) {
        tu_kv *kv = &F.m.a[i];
        if (kv->vl > 1000) continue; /* keep overflow chains where they are */
        tu_fill(kv->v, kv->vl, tu_next(&r));
        cr_assert_eq(eng_put(db, kv->k, kv->kl, kv->v, kv->vl, NULL), ENG_OK);
    }
    tu_close(db);
    map_blocks(&F);
    check_pristine_clean();

    uint8_t *np = malloc(F.ps), *op = malloc(F.ps), *torn = malloc(F.ps);
    static uint64_t set[4096];
    uint64_t n = blocks_of_type(&F, PAGE_LEAF, set, 4096);
    int done = 0;
    const size_t half = F.ps / 2, sector = 512;
    for (uint64_t j = 0; j < n && done < 12; j++) {
        uint64_t block = set[(j * 7) % n];
        tu_read_page(F.pristine, block, F.ps, np);
        tu_read_page(old, block, F.ps, op);
        int variant = done % 4;
        const char *vn;
        memcpy(torn, np, F.ps);
        switch (variant) {
        case 0:
            memcpy(torn + half, op + half, half);
            vn = "first half new, second half old";
            break;
        case 1:
            memset(torn + half, 0, half);
            vn = "second half zeros";
            break;
        case 2:
            memcpy(torn, op, half);
            vn = "first half old, second half new";
            break;
        default:
            memcpy(torn + sector, op + sector, F.ps - sector);
            vn = "only the first sector new";
            break;
        }
        /* a tear that yields the whole new or the whole old page is not a
         * tear (the old page is valid at its block: a lost write, which a
         * checksum cannot see) */
        if (!memcmp(torn, np, F.ps) || !memcmp(torn, op, F.ps)) continue;
        char what[160];
        snprintf(what, sizeof what, "[%s] torn leaf block %llu: %s", tu_backend_name(*backend),
                 (unsigned long long)block, vn);
        tu_copy_dir(F.pristine, F.work);
        tu_write_page(F.work, block, F.ps, torn);
        expect e = {ENG_LAYER_PAGE_CHECKSUM, (int64_t)block, 1, what};
        check_round(&e);
        done++;
    }
    cr_assert_geq(done, 8, "only %d torn-page rounds could be built", done);
    free(np);
    free(op);
    free(torn);
}

/* ---- truncated data file ---- */

TU_BACKEND_TEST(corruption, truncated_data_file_is_reported, T_TIMEOUT) {
    const uint64_t seed = 0x7e0cull + (uint64_t)*backend;
    fixture_build(*backend, 8192, seed);
    /* the last block that holds a page */
    int64_t last = (int64_t)F.nblocks - 1;
    while (last > 0 && F.type[last] == PAGE_ZERO) last--;
    cr_assert_gt(last, 1);
    for (int variant = 0; variant < 3; variant++) {
        uint64_t len = variant == 0   ? (uint64_t)last * F.ps        /* last page cut off */
                       : variant == 1 ? (uint64_t)last * F.ps + 20   /* cut inside its header */
                                      : (uint64_t)(last - 3) * F.ps; /* last four pages */
        char what[160], p[4096];
        snprintf(what, sizeof what, "[%s] data file of %llu blocks truncated to %llu bytes (last page: %s)",
                 tu_backend_name(*backend), (unsigned long long)F.nblocks, (unsigned long long)len,
                 page_type_name(F.type[last]));
        tu_copy_dir(F.pristine, F.work);
        cr_assert_eq(truncate(tu_path(p, sizeof p, F.work, "data"), (off_t)len), 0);
        /* which block is reported depends on which missing page is read
         * first; the file must be "data" and wrong data never returned */
        expect e = {-1, variant == 2 ? -1 : last, 0, what};
        check_round(&e);
    }
}

/* ---- verify blames only the damaged page ---- */
/* (engine/btree_verify.c BV1-BV3; docs/engine.md, Verify) */

/* One flipped bit in a page of a many-leaf tree: eng_verify and
 * eng_verify_dir report that block and no other (a leaf's neighbours keep
 * their sibling links, blocks under it are not called unreachable), and
 * name it as the one page they could not check (BV1-BV3 in btree_verify.c).  The
 * regression: a flip in a leaf also reported its left neighbour, "leaf
 * sibling link skips a leaf". */
TU_BACKEND_TEST(corruption, verify_reports_only_the_damaged_page_and_names_it_unchecked, T_TIMEOUT) {
    const uint64_t seed = 0x0b1a3e5ull + (uint64_t)*backend;
    fixture_build(*backend, 8192, seed);
    check_pristine_clean();
    static uint64_t set[4096];
    uint64_t targets[24];
    int nt = 0;
    const int types[] = {PAGE_LEAF, PAGE_INTERNAL, PAGE_OVERFLOW};
    const int per_type[] = {14, 3, 3};
    for (int t = 0; t < 3; t++) {
        uint64_t n = blocks_of_type(&F, types[t], set, 4096);
        cr_assert_gt(n, 0, "the fixture has no %s page", page_type_name(types[t]));
        if (types[t] == PAGE_LEAF) cr_assert_geq(n, 10, "too few leaves: %llu", (unsigned long long)n);
        for (int k = 0; k < per_type[t] && (uint64_t)k < n; k++)
            targets[nt++] = set[k == 0 ? 0 : k == 1 ? n - 1 : (uint64_t)k * n / (uint64_t)per_type[t]];
    }
    tu_rng r = {seed};
    uint8_t *page = malloc(F.ps);
    char buf[4096];
    for (int i = 0; i < nt; i++) {
        uint64_t block = targets[i];
        uint64_t off = PAGE_HDR + tu_below(&r, F.ps - PAGE_HDR);
        char what[200];
        snprintf(what, sizeof what, "[%s] bit flip at byte %llu of %s block %llu", tu_backend_name(*backend),
                 (unsigned long long)off, page_type_name(F.type[block]), (unsigned long long)block);
        tu_copy_dir(F.pristine, F.work);
        tu_read_page(F.work, block, F.ps, page);
        page[off] ^= 0x10;
        tu_write_page(F.work, block, F.ps, page);
        for (int dir = 0; dir < 2; dir++) {
            tu_reports_reset(&F.vrep);
            eng_verify_info info;
            int rc;
            if (dir) {
                eng_options o = tu_opts(F.backend, 0, 0, NULL);
                rc = eng_verify_dir_ex(F.work, &o, tu_collect, &F.vrep, &info);
            } else {
                eng_options o = tu_opts(F.backend, 0, 0, NULL);
                o.cache_size = CACHE_PAGES * (size_t)F.ps;
                eng_db *db = tu_open(F.work, &o);
                rc = eng_verify_ex(db, tu_collect, &F.vrep, &info);
                tu_close(db);
            }
            const char *how = dir ? "eng_verify_dir_ex" : "eng_verify_ex";
            cr_assert_eq(rc, ENG_CORRUPTION, "%s: %s: %s", what, how, eng_strerror(rc));
            tu_reports_str(&F.vrep, buf, sizeof buf);
            cr_assert(F.vrep.n >= 1 && info.problems == F.vrep.total, "%s: %s: %llu problems, %zu reports:\n%s", what,
                      how, (unsigned long long)info.problems, F.vrep.total, buf);
            for (size_t k = 0; k < F.vrep.n; k++)
                cr_assert(F.vrep.r[k].block == (int64_t)block && !strcmp(F.vrep.r[k].file, "data"),
                          "%s: %s blames another page:\n%s", what, how, buf);
            /* Only an unchecked root (block 1) stops the walk of the tree. */
            cr_assert(info.unchecked == 1 && info.unchecked_blocks[0] == block && info.tree_skipped == (block == 1),
                      "%s: %s: %llu unchecked pages (first %llu), tree skipped %d", what, how,
                      (unsigned long long)info.unchecked, (unsigned long long)info.unchecked_blocks[0],
                      info.tree_skipped);
            /* The leak check cannot run: the page may refer to blocks. */
            cr_assert(info.leaks_skipped, "%s: %s ran the unreachable-block check past an unchecked page", what, how);
        }
    }
    free(page);
}
