/*
 * test_checksums_off_no_crash.c -- with data_checksums off, a damaged data
 * file never crashes, hangs or trips a sanitizer (docs/engine.md, Pages and
 * checksums: "every decoder is bounds-checked and reports CORRUPTION on
 * nonsense").
 *
 * A database created with data_checksums = 0 (4 KiB pages, long keys,
 * overflow values, a free list) is the pristine copy.  Each round restores
 * it, applies 1-3 random kinds of damage (random bytes, bit flips, header,
 * slot and cell fields set to extreme values, meta fields, swapped, copied
 * and zeroed pages, truncation), then reopens and runs every get, forward
 * and backward scans, eng_verify and, in half the rounds, a few writes.
 * Asserted:
 *   - every status is one the contract allows for the call (OK / NOTFOUND /
 *     CORRUPTION); verify's problem count agrees with its status;
 *   - lengths are sane: keys 1..ENG_MAX_KEY, values no longer than the data
 *     file, buffers as long as they claim (every returned byte is read, so
 *     ASan sees any out-of-bounds pointer);
 *   - scans terminate (a sibling-link cycle must not loop) and return keys
 *     in strictly increasing (forward) / decreasing (backward) order;
 *   - no round takes longer than a watchdog (a hang aborts with the seed).
 * Wrong values are allowed: without checksums they are undetectable.
 * The PRNG seed is fixed; a failing round prints its seed, and setting
 * CKOFF_SEED=<seed> (and optionally CKOFF_BACKEND=0|1) replays just it.
 */
#include <signal.h>
#include <sys/wait.h>

#include "testutil.h"

#include "page.h"

#define T_TIMEOUT .timeout = 400, .fini = tu_cleanup

#define PS               4096u
#define NKEYS            900
#define ROUNDS           300 /* per backend */
#define WATCHDOG_SECONDS 5

typedef struct keyset {
    uint8_t *k[NKEYS];
    size_t kl[NKEYS];
} keyset;

static keyset KS;
static const char *pristine, *work;
static uint64_t pristine_blocks;

/* ---- watchdog ---- */

static volatile sig_atomic_t cur_round = -1;
static volatile uint64_t cur_seed;
static volatile const char *cur_step = "";
static char cur_desc[1024]; /* the damage of the current round */

static void on_alarm(int sig) {
    (void)sig;
    char msg[1400];
    int n = snprintf(msg, sizeof msg, "\nWATCHDOG: round %d seed %#llx hung for %ds in step '%s'; damage:%s\n",
                     (int)cur_round, (unsigned long long)cur_seed, WATCHDOG_SECONDS, (const char *)cur_step, cur_desc);
    if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n);
        (void)w;
    }
    /* .fini does not run after abort: remove the temp dirs with
     * async-signal-safe calls only (fork, execve, waitpid) */
    pid_t pid = fork();
    if (pid == 0) {
        char *const argv[] = {"rm", "-rf", (char *)pristine, (char *)work, NULL};
        char *const envp[] = {NULL};
        execve("/bin/rm", argv, envp);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    abort();
}

/* ---- fixture ---- */

static void build(int backend) {
    pristine = tu_tmpdir();
    work = tu_tmpdir();
    eng_options o = tu_opts(backend, PS, 0, NULL);
    o.data_checksums = 0;
    eng_db *db = tu_open(pristine, &o);
    tu_rng r = {0xc0ffee};
    static uint8_t v[30000];
    for (int i = 0; i < NKEYS; i++) {
        uint8_t kb[ENG_MAX_KEY];
        size_t kl = tu_key((char *)kb, (uint64_t)i * 3);
        if (i % 10 == 3) { /* some long keys: a few per page */
            size_t extra = tu_range(&r, 10, i % 50 == 3 ? ENG_MAX_KEY - kl : 300);
            tu_fill(kb + kl, extra, (uint64_t)i);
            kl += extra;
        }
        KS.k[i] = tu_dup(kb, kl);
        KS.kl[i] = kl;
        size_t vl = i % 30 == 5 ? tu_range(&r, 5000, 30000) : tu_range(&r, 0, 120);
        tu_fill(v, vl, (uint64_t)i * 77);
        cr_assert_eq(eng_put(db, kb, kl, v, vl, NULL), ENG_OK);
    }
    /* deletes (incl. overflow values) leave free pages behind */
    for (int i = 0; i < NKEYS; i += 7) cr_assert_eq(eng_delete(db, KS.k[i], KS.kl[i], NULL), ENG_OK);
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.data_checksums, 0, "created with data_checksums=0 but stats say %d", st.data_checksums);
    tu_close(db);
    pristine_blocks = tu_data_nblocks(pristine, PS);
    cr_assert_gt(pristine_blocks, 20);
}

/* ---- damage ---- */

static uint64_t extreme(tu_rng *r, int bytes) {
    const uint64_t nb = pristine_blocks;
    const uint64_t v[] = {
        0,        1,  0xff,   0xffff, 0xfffe,     PS - 1,     PS,         PS + 1,      PS / 2,         PAGE_HDR - 1,
        PAGE_HDR, nb, nb - 1, nb + 1, 0x7fffffff, 0xffffffff, 0x80000000, ENG_MAX_KEY, ENG_MAX_KEY + 1};
    uint64_t x = tu_below(r, 5) == 0 ? tu_next(r) : v[tu_below(r, sizeof v / sizeof v[0])];
    if (bytes == 1) return x & 0xff;
    if (bytes == 2) return x & 0xffff;
    return x & 0xffffffff;
}

static void put_field(uint8_t *p, size_t off, int bytes, uint64_t x) {
    if (off + (size_t)bytes > PS) return;
    if (bytes == 1)
        p[off] = (uint8_t)x;
    else if (bytes == 2)
        wr16(p + off, (uint16_t)x);
    else
        wr32(p + off, (uint32_t)x);
}

/* One mutation of the work copy; appends a description to DESC. */
static void damage_once(tu_rng *r, char *desc, size_t cap) {
    static uint8_t p[PS], q[PS];
    uint64_t nb = tu_data_nblocks(work, PS);
    if (nb == 0) return;
    uint64_t b = tu_below(r, 10) == 0 ? 0 : tu_below(r, nb);
    uint64_t b2 = tu_below(r, nb);
    tu_read_page(work, b, PS, p);
    int kind = (int)tu_below(r, 12);
    size_t dl = strlen(desc);
    char *d = desc + dl;
    size_t dc = cap - dl;
    switch (kind) {
    case 0: { /* random bytes */
        size_t off = tu_below(r, PS), n = tu_range(r, 1, 16);
        for (size_t i = 0; i < n && off + i < PS; i++) p[off + i] = (uint8_t)tu_next(r);
        snprintf(d, dc, " rand-bytes(b%llu@%zu+%zu)", (unsigned long long)b, off, n);
        break;
    }
    case 1: { /* bit flips */
        int n = (int)tu_range(r, 1, 8);
        for (int i = 0; i < n; i++) {
            size_t off = tu_below(r, PS);
            p[off] ^= (uint8_t)(1u << tu_below(r, 8));
        }
        snprintf(d, dc, " bitflips(b%llu x%d)", (unsigned long long)b, n);
        break;
    }
    case 2:
    case 3: { /* a header field */
        static const struct {
            size_t off;
            int bytes;
            const char *name;
        } f[] = {{16, 4, "block"}, {20, 1, "type"}, {21, 1, "flags"}, {22, 2, "nslots"}, {24, 2, "lower"},
                 {26, 2, "upper"}, {28, 2, "frag"}, {30, 2, "level"}, {32, 4, "next"},   {36, 4, "aux"}};
        int i = (int)tu_below(r, sizeof f / sizeof f[0]);
        uint64_t x = extreme(r, f[i].bytes);
        if (f[i].off == 20 && tu_below(r, 2)) x = tu_below(r, PAGE_TYPE_MAX + 2);
        put_field(p, f[i].off, f[i].bytes, x);
        snprintf(d, dc, " hdr(b%llu %s=%#llx)", (unsigned long long)b, f[i].name, (unsigned long long)x);
        break;
    }
    case 4:
    case 5: { /* a slot, or a field of the cell it points to */
        unsigned ns = ph_get_nslots(p);
        if (ns == 0 || PAGE_HDR + 2u * ns > PS) {
            p[PAGE_HDR] ^= 0x55;
            snprintf(d, dc, " slot0(b%llu)", (unsigned long long)b);
            break;
        }
        unsigned s = (unsigned)tu_below(r, ns);
        uint16_t co = page_slot(p, s);
        if (kind == 4 || co + 12u > PS) {
            uint64_t x = extreme(r, 2);
            wr16(p + PAGE_HDR + 2u * s, (uint16_t)x);
            snprintf(d, dc, " slot(b%llu s%u=%#llx)", (unsigned long long)b, s, (unsigned long long)x);
        } else {
            /* leaf: klen@0 u16, cflags@2 u8, vlen@3 u32, ovfl after key; internal: klen@0, child@2 u32 */
            int which = (int)tu_below(r, 5);
            size_t off = co;
            int bytes = 2;
            if (which == 1) {
                off = co + 2;
                bytes = ph_get_type(p) == PAGE_LEAF ? 1 : 4;
            }
            if (which == 2) {
                off = co + 3;
                bytes = 4;
            }
            if (which == 3) {
                off = co + 2;
                bytes = 4;
            }
            if (which == 4) {
                off = (size_t)co + LEAF_CELL_HDR + rd16(p + co);
                bytes = 4;
            } /* overflow ptr */
            uint64_t x = extreme(r, bytes);
            if (which == 1 && bytes == 1) x = tu_below(r, 2) ? (p[co + 2] ^ CELL_OVERFLOW) : x;
            put_field(p, off, bytes, x);
            snprintf(d, dc, " cell(b%llu s%u f%d=%#llx)", (unsigned long long)b, s, which, (unsigned long long)x);
        }
        break;
    }
    case 6: { /* meta fields: root, nblocks, freelist, height */
        tu_read_page(work, 0, PS, p);
        b = 0;
        size_t off = PAGE_HDR + 8 + 4 * tu_below(r, 4);
        uint64_t x = extreme(r, 4);
        if (tu_below(r, 2)) x = tu_below(r, nb + 2);
        put_field(p, off, 4, x);
        snprintf(d, dc, " meta(@%zu=%#llx)", off, (unsigned long long)x);
        break;
    }
    case 7: /* swap two pages */
        tu_read_page(work, b2, PS, q);
        tu_write_page(work, b2, PS, p);
        memcpy(p, q, PS);
        snprintf(d, dc, " swap(b%llu,b%llu)", (unsigned long long)b, (unsigned long long)b2);
        break;
    case 8: /* copy a page over another */
        tu_read_page(work, b2, PS, p);
        snprintf(d, dc, " copy(b%llu->b%llu)", (unsigned long long)b2, (unsigned long long)b);
        break;
    case 9: /* zero a page */
        memset(p, 0, PS);
        snprintf(d, dc, " zero(b%llu)", (unsigned long long)b);
        break;
    case 10: { /* copy another page's cells/slots region (plausible but wrong structure) */
        tu_read_page(work, b2, PS, q);
        size_t off = PAGE_HDR + tu_below(r, PS - PAGE_HDR), n = tu_below(r, PS - off) + 1;
        memcpy(p + off, q + off, n);
        snprintf(d, dc, " splice(b%llu<-b%llu@%zu+%zu)", (unsigned long long)b, (unsigned long long)b2, off, n);
        break;
    }
    default: { /* file length: truncate, or append a garbage page */
        char path[4096];
        tu_path(path, sizeof path, work, "data");
        if (tu_below(r, 2) && nb > 2) {
            uint64_t len = tu_below(r, 3) == 0 ? tu_range(r, 1, nb * PS - 1) : tu_range(r, 1, nb - 1) * PS;
            cr_assert_eq(truncate(path, (off_t)len), 0);
            snprintf(d, dc, " truncate(%llu)", (unsigned long long)len);
        } else {
            tu_fill(q, PS, tu_next(r));
            tu_write_page(work, nb, PS, q);
            snprintf(d, dc, " append-garbage(b%llu)", (unsigned long long)nb);
        }
        return;
    }
    }
    tu_write_page(work, b, PS, p);
}

/* ---- checks ---- */

typedef struct round_ctx {
    int round;
    uint64_t seed;
    const char *desc;
    uint64_t file_bytes;
    int order_violations;                                 /* scans that returned keys out of order */
    int scan_runaways;                                    /* scans that did not end */
    int open_failed, verify_found, gets_corrupt, gets_ok; /* coverage, logged */
    char first_order[300];
} round_ctx;

static volatile uint64_t sink;

static void touch(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += b[i];
    sink += s;
}

static void ignore_report(void *ctx, const eng_corruption *r) {
    (void)ctx;
    (void)r;
}

static int allowed(int rc, int a, int b, int c) { return rc == a || rc == b || rc == c; }

static void check_value(const round_ctx *x, const void *v, size_t vl, const char *call) {
    cr_assert(vl <= x->file_bytes && vl <= ENG_MAX_VALUE,
              "round %d seed %#llx damage:%s\n  %s returned a %zu-byte value from a %llu-byte file", x->round,
              (unsigned long long)x->seed, x->desc, call, vl, (unsigned long long)x->file_bytes);
    cr_assert(vl == 0 || v != NULL, "round %d seed %#llx: %s: NULL value of length %zu", x->round,
              (unsigned long long)x->seed, call, vl);
    touch(v, vl);
}

static void do_scan(eng_db *db, round_ctx *x, int backward, const eng_iter_options *io) {
    eng_iter *it = NULL;
    cur_step = backward ? "backward scan" : "forward scan";
    int rc = eng_iter_open(db, io, &it);
    cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION, "round %d seed %#llx damage:%s\n  eng_iter_open: %s", x->round,
              (unsigned long long)x->seed, x->desc, eng_strerror(rc));
    if (rc != ENG_OK) return;
    static uint8_t prev[ENG_MAX_KEY];
    size_t prevl = 0;
    int have = 0;
    long steps = 0;
    for (rc = backward ? eng_iter_last(it) : eng_iter_first(it); rc == ENG_OK;
         rc = backward ? eng_iter_prev(it) : eng_iter_next(it)) {
        cr_assert(eng_iter_valid(it), "round %d seed %#llx: movement returned OK but iterator not valid", x->round,
                  (unsigned long long)x->seed);
        size_t kl = 0, vl = 0;
        const void *k = eng_iter_key(it, &kl);
        const void *v = eng_iter_value(it, &vl);
        cr_assert(kl >= 1 && kl <= ENG_MAX_KEY && k != NULL,
                  "round %d seed %#llx damage:%s\n  scan returned a key of length %zu", x->round,
                  (unsigned long long)x->seed, x->desc, kl);
        touch(k, kl);
        check_value(x, v, vl, "iterator");
        if (have) {
            int c = tu_keycmp(k, kl, prev, prevl);
            if (backward ? c >= 0 : c <= 0) {
                if (x->order_violations++ == 0)
                    snprintf(x->first_order, sizeof x->first_order, "round %d seed %#llx %s scan, damage:%s", x->round,
                             (unsigned long long)x->seed, backward ? "bwd" : "fwd", x->desc);
                break;
            }
        }
        memcpy(prev, k, kl);
        prevl = kl;
        have = 1;
        if (++steps > 4 * NKEYS + 100) {
            x->scan_runaways++;
            if (x->order_violations++ == 0)
                snprintf(x->first_order, sizeof x->first_order, "round %d seed %#llx %s scan did not end, damage:%s",
                         x->round, (unsigned long long)x->seed, backward ? "bwd" : "fwd", x->desc);
            break;
        }
    }
    /* A write that met corruption after changing pages poisons the handle,
     * and a poisoned handle refuses reads too (engine.h). */
    if (rc != ENG_OK)
        cr_assert(rc == ENG_NOTFOUND || rc == ENG_CORRUPTION || rc == ENG_POISONED,
                  "round %d seed %#llx damage:%s\n  scan ended with %s", x->round, (unsigned long long)x->seed, x->desc,
                  eng_strerror(rc));
    eng_iter_close(it);
}

static void run_round(int backend, round_ctx *x, tu_reports *rep) {
    tu_rng r = {x->seed};
    char *desc = cur_desc;
    desc[0] = 0;
    x->desc = desc;
    cur_step = "damage";
    tu_copy_dir(pristine, work);
    int nd = (int)tu_range(&r, 1, 3);
    for (int i = 0; i < nd; i++) damage_once(&r, desc, sizeof cur_desc);
    if (tu_below(&r, 40) == 0) { /* rarely, the control file too (it has its own checksum) */
        char path[4096];
        int fd = open(tu_path(path, sizeof path, work, "control"), O_RDWR);
        cr_assert(fd >= 0);
        uint64_t sz = tu_file_size(work, "control");
        if (sz) {
            uint8_t byte;
            off_t off = (off_t)tu_below(&r, sz);
            cr_assert_eq(pread(fd, &byte, 1, off), 1);
            byte ^= (uint8_t)(1u << tu_below(&r, 8));
            cr_assert_eq(pwrite(fd, &byte, 1, off), 1);
            strcat(desc, " control-bitflip");
        }
        close(fd);
    }
    x->file_bytes = tu_file_size(work, "data") + PS;

    tu_reports_reset(rep);
    eng_options o = tu_opts(backend, PS, tu_below(&r, 2) ? 16 : 256, rep);
    o.create_if_missing = 0;
    eng_db *db = NULL;
    cur_step = "open";
    int rc = eng_open(work, &o, &db);
    if (rc != ENG_OK) {
        cr_assert_eq(rc, ENG_CORRUPTION, "round %d seed %#llx damage:%s\n  eng_open: %s", x->round,
                     (unsigned long long)x->seed, desc, eng_strerror(rc));
        cr_assert_null(db);
        x->open_failed++;
        cr_assert_gt(rep->total, 0, "round %d seed %#llx: open returned corruption with no report", x->round,
                     (unsigned long long)x->seed);
        uint64_t probs = 0;
        cur_step = "verify_dir";
        rc = eng_verify_dir(work, &o, ignore_report, NULL, &probs);
        cr_assert(rc == ENG_CORRUPTION || rc == ENG_OK, "round %d seed %#llx damage:%s\n  eng_verify_dir: %s", x->round,
                  (unsigned long long)x->seed, desc, eng_strerror(rc));
        return;
    }
    eng_stats st;
    cr_assert_eq(eng_get_stats(db, &st), ENG_OK);
    cr_assert_eq(st.data_checksums, 0);

    /* every key, and some absent ones */
    eng_buf b = {0};
    cur_step = "gets";
    for (int i = 0; i < NKEYS + 30; i++) {
        char ab[16];
        const void *k = i < NKEYS ? (const void *)KS.k[i] : (const void *)ab;
        size_t kl = i < NKEYS ? KS.kl[i] : tu_key(ab, (uint64_t)(i - NKEYS) * 3 + 1);
        size_t before = rep->total;
        rc = eng_get(db, k, kl, &b);
        cr_assert(allowed(rc, ENG_OK, ENG_NOTFOUND, ENG_CORRUPTION),
                  "round %d seed %#llx damage:%s\n  eng_get of key %d: %s", x->round, (unsigned long long)x->seed, desc,
                  i, eng_strerror(rc));
        x->gets_corrupt += rc == ENG_CORRUPTION;
        x->gets_ok += rc == ENG_OK;
        if (rc == ENG_CORRUPTION)
            cr_assert_gt(rep->total, before, "round %d seed %#llx: get returned corruption with no report", x->round,
                         (unsigned long long)x->seed);
        if (rc == ENG_OK) {
            cr_assert(b.len <= b.cap, "round %d seed %#llx: eng_buf len %zu > cap %zu", x->round,
                      (unsigned long long)x->seed, b.len, b.cap);
            check_value(x, b.data, b.len, "eng_get");
        }
    }
    eng_buf_free(&b);

    /* scans: unbounded both ways, and one bounded range */
    eng_iter_options all = {0};
    do_scan(db, x, 0, &all);
    do_scan(db, x, 1, &all);
    char lo[16], hi[16];
    eng_iter_options rng = {lo, tu_key(lo, tu_below(&r, NKEYS * 3)), hi, 0, NULL};
    rng.upper_len = tu_key(hi, strtoull(lo + 1, NULL, 10) + tu_below(&r, 300));
    do_scan(db, x, (int)tu_below(&r, 2), &rng);

    /* verify */
    cur_step = "verify";
    uint64_t probs = 0;
    rc = eng_verify(db, ignore_report, NULL, &probs);
    cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION, "round %d seed %#llx damage:%s\n  eng_verify: %s", x->round,
              (unsigned long long)x->seed, desc, eng_strerror(rc));
    x->verify_found += rc == ENG_CORRUPTION;
    cr_assert((rc == ENG_OK) == (probs == 0), "round %d seed %#llx: eng_verify returned %s with %llu problems",
              x->round, (unsigned long long)x->seed, eng_strerror(rc), (unsigned long long)probs);

    /* a few writes on the damaged tree, then read again */
    if (tu_below(&r, 2)) {
        cur_step = "writes";
        static uint8_t v[9000];
        for (int i = 0; i < 12; i++) {
            int ki = (int)tu_below(&r, NKEYS);
            if (tu_below(&r, 3) == 0) {
                /* A write that met corruption after changing pages leaves
                 * its batch in doubt and the handle poisoned (engine.h). */
                rc = eng_delete(db, KS.k[ki], KS.kl[ki], NULL);
                cr_assert(allowed(rc, ENG_OK, ENG_NOTFOUND, ENG_CORRUPTION) || rc == ENG_POISONED,
                          "round %d seed %#llx damage:%s\n  eng_delete: %s", x->round, (unsigned long long)x->seed,
                          desc, eng_strerror(rc));
            } else {
                size_t vl = tu_below(&r, 4) == 0 ? tu_range(&r, PS, sizeof v) : tu_below(&r, 200);
                tu_fill(v, vl, (uint64_t)i);
                rc = eng_put(db, KS.k[ki], KS.kl[ki], v, vl, NULL);
                cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION || rc == ENG_POISONED,
                          "round %d seed %#llx damage:%s\n  eng_put: %s", x->round, (unsigned long long)x->seed, desc,
                          eng_strerror(rc));
            }
        }
        x->file_bytes = tu_file_size(work, "data") + 64 * (uint64_t)PS + sizeof v;
        do_scan(db, x, 0, &all);
    }
    cur_step = "close";
    rc = eng_close(db);
    cr_assert(rc == ENG_OK || rc == ENG_CORRUPTION || rc == ENG_POISONED,
              "round %d seed %#llx damage:%s\n  eng_close: %s", x->round, (unsigned long long)x->seed, desc,
              eng_strerror(rc));
}

static void run_rounds(int backend, uint64_t base_seed) {
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    const char *only = getenv("CKOFF_SEED");
    const char *only_b = getenv("CKOFF_BACKEND");
    if (only_b && atoi(only_b) != backend) return;
    build(backend);
    static tu_reports rep;
    tu_reports_init(&rep);
    round_ctx x = {0};
    for (int round = 0; round < ROUNDS; round++) {
        x.round = round;
        x.seed = only ? strtoull(only, NULL, 0) : rng_mix64(base_seed + (uint64_t)round);
        cur_round = round;
        cur_seed = x.seed;
        alarm(WATCHDOG_SECONDS);
        run_round(backend, &x, &rep);
        alarm(0);
        if (only) break;
    }
    cr_log_info("[%s] %d rounds: open failed %d, verify found problems in %d; gets ok %d, corruption %d",
                tu_backend_name(backend), ROUNDS, x.open_failed, x.verify_found, x.gets_ok, x.gets_corrupt);
    cr_assert_eq(x.order_violations, 0, "%d scans returned keys out of order or never ended (%d runaways); first: %s",
                 x.order_violations, x.scan_runaways, x.first_order);
}

TU_BACKEND_TEST(checksums_off, random_damage_never_crashes_hangs_or_returns_bad_lengths, T_TIMEOUT) {
    run_rounds(*backend, 0xdead0000ull + 0x100ull * (uint64_t)*backend);
}
