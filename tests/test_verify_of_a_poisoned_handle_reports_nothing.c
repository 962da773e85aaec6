/*
 * test_verify_of_a_poisoned_handle_reports_nothing.c -- an operation that
 * fails after changing pages leaves them half-done in the cache and
 * poisons the handle (their record was never logged; the reopen drops
 * them).  eng_verify of that handle must refuse (ENG_POISONED) rather
 * than judge the half-done pages: a put whose overflow chain was written
 * before a write-back failed with ENOSPC left the chain's blocks counted
 * as allocated in the cached meta page but referred to by nothing, and
 * verify reported each as "allocated but unreachable" on a database the
 * reopen finds intact.  The stress driver meets it with two threads, an
 * online verify and ENOSPC on the data file (stress --threads=2
 * --verify_db_one_in=200 --nospace_one_in=100 --fault_files=data
 * --large_value_one_in=1000 --large_value_size=65536 --cache_size=65536
 * --page_size=4096 --duration=3 --seed=2: a false alarm in most runs).
 */
#include "mvcc_helpers.h"

#define NKEYS 2000u

/* Data-file writes fail with ENOSPC while armed. */
static struct {
    int armed;
    uint64_t failed;
} NS;

static int ns_before(void *ctx, eng_io_op *op) {
    (void)ctx;
    if (!NS.armed || op->kind != ENG_IO_WRITE || !is_data_file(op)) return 0;
    NS.failed++;
    return -ENOSPC;
}

static void record_report(void *ctx, const eng_corruption *r) {
    size_t *n = ctx;
    (*n)++;
    cr_log_info("reported: layer %d block %lld: %s", r->layer, (long long)r->block, r->detail);
}

/* Dirty every frame of the cache, then put a value whose overflow chain
 * needs more frames than the clean ones left: a chain page's frame is
 * claimed by writing a dirty page back, which fails.  Returns the put's
 * status. */
static int put_large_into_a_dirty_cache(eng_db *db, int32_t *g) {
    batch b;
    batch_init(&b, 80);
    for (uint64_t i = 0; i < NKEYS; i += NKEYS / 64) batch_add(&b, i, 1), g[i] = 1;
    uint64_t seq = 0;
    cr_assert_eq(eng_write(db, b.ops, b.n, &seq), ENG_OK);
    cr_assert_eq(eng_sync(db), ENG_OK); /* durable: the reopen below must find it */
    batch_free(&b);
    size_t vlen = 12 * PS;
    uint8_t *v = malloc(vlen);
    cr_assert(v);
    memset(v, 0x5a, vlen);
    char k[CU_KLEN + 1];
    size_t kl = cu_key(k, NKEYS + 1);
    NS.armed = 1;
    int rc = eng_put(db, k, kl, v, vlen, &seq);
    NS.armed = 0;
    free(v);
    return rc;
}

TU_BACKEND_TEST_FN(verify, of_a_poisoned_handle_refuses_and_reports_nothing, T_OPTS) {
    const char *dir = tu_tmpdir_db();
    static eng_io_hooks hooks = {NULL, ns_before, NULL};
    memset(&NS, 0, sizeof NS);
    eng_options o = mv_opts(backend, 16);
    o.io_hooks = &hooks;
    int32_t *g = gens_new(NKEYS + 2);
    eng_db *db = tu_open(dir, &o);
    load_keys(db, g, 0, NKEYS, 100);
    tu_close(db);

    db = tu_open(dir, &o);
    int rc = put_large_into_a_dirty_cache(db, g);
    cr_assert(NS.failed > 0, "no data write was failed (the put returned %s)", eng_strerror(rc));
    cr_assert_neq(rc, ENG_OK, "the put succeeded although every write-back failed");
    cr_assert(eng_poisoned(db), "the put failed with %s without changing a page: the scenario did not form",
              eng_strerror(rc));

    size_t reports = 0;
    uint64_t problems = 0;
    rc = eng_verify(db, record_report, &reports, &problems);
    cr_assert_eq(rc, ENG_POISONED, "verify of a poisoned handle returned %s (%llu problems)", eng_strerror(rc),
                 (unsigned long long)problems);
    cr_assert_eq(reports, 0, "verify of a poisoned handle reported %zu problems", reports);
    cr_assert_eq(problems, 0);
    eng_close(db);

    /* The reopen drops the half-done put: every key as loaded, verify clean. */
    vf_reopen_clean(dir, &o, g, NKEYS + 2, "reopen after the failed put");
    free(g);
}
