/*
 * adapter_engine.c -- the stress adapter (adapter.h) for our engine
 * (engine/engine.h).  Thin: status and report translation, options, and
 * eng_buf / st_buf sharing one layout.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapter.h"
#include "promises.h"
#include "engine.h"
#include "inspect.h"

struct st_db {
    eng_db *db;
    st_corruption_fn fn;
    void *ctx;
};

const char *st_status_name(int s) {
    static const char *n[] = {"ok",       "notfound", "corruption", "ioerr",  "nospace",
                              "poisoned", "busy",     "invalid",    "notsup", "other"};
    return s >= 0 && s <= ST_OTHER ? n[s] : "other";
}

void st_buf_free(st_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int st_opt_listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *c = list; c && *c; c += strcspn(c, ","), c += *c == ',')
        if (strcspn(c, ",") == n && !strncmp(c, name, n)) return 1;
    return 0;
}

int st_refuse_options(const st_open_options *o, const char *engine, const char *words, const char *const meaningless[],
                      const char *extra, char *why, size_t cap) {
    if (o->hook_options) {
        char names[512];
        size_t len = 0;
        names[0] = 0;
        for (const char *c = o->hook_options; *c && len < sizeof names; c += strcspn(c, ","), c += *c == ',')
            len +=
                (size_t)snprintf(names + len, sizeof names - len, "%s--%.*s", len ? ", " : "", (int)strcspn(c, ","), c);
        snprintf(why, cap,
                 "--engine %s: %s need%s the fault library's hooks in the engine (faults, the power-loss journal, "
                 "kill points, delays), which %s has none of here (the fault door serves it "
                 "--sync_fault_injection, kill points and its promise table's classes, with --faults_via posix)",
                 engine, names, strchr(o->hook_options, ',') ? "" : "s", words);
        return ST_NOTSUP;
    }
    char bad[512] = "";
    size_t len = 0;
    for (size_t i = 0; meaningless[i] && len < sizeof bad; i++)
        if (st_opt_listed(o->changed_options, meaningless[i]))
            len += (size_t)snprintf(bad + len, sizeof bad - len, "%s--%s", len ? ", " : "", meaningless[i]);
    if (extra && len < sizeof bad) len += (size_t)snprintf(bad + len, sizeof bad - len, "%s%s", len ? ", " : "", extra);
    if (len) {
        snprintf(why, cap, "--engine %s: %s mean nothing to %s (stress/README.md, Other engines)", engine, bad, words);
        return ST_NOTSUP;
    }
    return ST_OK;
}

static int st_of(int rc) {
    switch (rc) {
    case ENG_OK: return ST_OK;
    case ENG_NOTFOUND: return ST_NOTFOUND;
    case ENG_CORRUPTION: return ST_CORRUPTION;
    case ENG_IOERR: return ST_IOERR;
    case ENG_NOSPACE: return ST_NOSPACE;
    case ENG_POISONED: return ST_POISONED;
    case ENG_BUSY: return ST_BUSY;
    case ENG_INVALID: return ST_INVALID;
    case ENG_NOTSUP: return ST_NOTSUP;
    default: return ST_OTHER;
    }
}

static void on_report(void *ctx, const eng_corruption *r) {
    st_db *a = ctx;
    if (!a->fn) return;
    st_corruption c = {eng_layer_name(r->layer), r->file, r->block, r->offset, r->detail, r->entry};
    a->fn(a->ctx, &c);
}

static int check_options(const st_open_options *o, char *why, size_t cap) {
    int w = o->block_protection_bytes_per_key;
    if (w != 0 && w != 1 && w != 2 && w != 4 && w != 8) {
        snprintf(why, cap, "block_protection_bytes_per_key: %d is not 0, 1, 2, 4 or 8", w);
        return ST_NOTSUP;
    }
    return ST_OK;
}

static void to_eng(const st_open_options *o, eng_options *e, st_db *a) {
    eng_options_init(e);
    e->page_size = o->page_size;
    e->cache_size = o->cache_size;
    e->data_checksums = o->data_checksums;
    e->full_page_writes = o->full_page_writes;
    e->wal_compression = o->wal_compression ? ENG_WAL_COMPRESSION_ZSTD : ENG_WAL_COMPRESSION_NONE;
    e->io_backend = o->io_backend ? ENG_IO_PSYNC : ENG_IO_URING;
    e->sync_mode = o->sync_mode == 1 ? ENG_SYNC_GROUP : o->sync_mode == 2 ? ENG_SYNC_OFF : ENG_SYNC_COMMIT;
    if (o->wal_segment_size) e->wal_segment_size = o->wal_segment_size;
    if (o->first_xid) e->first_xid = o->first_xid;
    e->checkpoint_wal_bytes = o->checkpoint_wal_bytes;
    e->wal_log_hints = o->wal_log_hints;
    e->block_protection_bytes_per_key = o->block_protection_bytes_per_key;
    e->kv_lazy_leaves = o->kv_lazy_leaves == 1 ? 1 : o->kv_lazy_leaves == 2 ? -1 : 0;
    e->hint_fpi = o->hint_fpi;
    e->vacuum_freeze_min_age = o->vacuum_freeze_min_age;
    e->io_hooks = o->io_hooks;
    if (a) {
        e->on_corruption = on_report;
        e->on_corruption_ctx = a;
    }
}

static int a_open(const char *dir, const st_open_options *o, st_db **out) {
    *out = NULL;
    st_db *a = calloc(1, sizeof *a);
    if (!a) return ST_OTHER;
    a->fn = o->on_corruption;
    a->ctx = o->on_corruption_ctx;
    eng_options e;
    to_eng(o, &e, a);
    int rc = eng_open(dir, &e, &a->db);
    if (rc != ENG_OK) {
        free(a);
        return st_of(rc);
    }
    *out = a;
    return ST_OK;
}

static int a_close(st_db *a) {
    int rc = eng_close(a->db);
    free(a);
    return st_of(rc);
}

static int a_write(st_db *a, const st_op *ops, size_t n, uint64_t *seq) {
    eng_op e[16] = {{0}};
    eng_op *p = n <= 16 ? e : malloc(n * sizeof *p);
    if (!p) return ST_OTHER;
    for (size_t i = 0; i < n; i++)
        p[i] = (eng_op){.kind = ops[i].kind == ST_PUT ? ENG_OP_PUT : ENG_OP_DELETE,
                        .key = ops[i].key,
                        .klen = ops[i].klen,
                        .val = ops[i].val,
                        .vlen = ops[i].vlen};
    int rc = eng_write(a->db, p, n, seq);
    if (p != e) free(p);
    /* A delete of an absent key is still a logged, sequenced write. */
    return rc == ENG_NOTFOUND ? ST_OK : st_of(rc);
}

static int a_get(st_db *a, const void *k, size_t kl, st_buf *v) { return st_of(eng_get(a->db, k, kl, (eng_buf *)v)); }

_Static_assert(sizeof(st_buf) == sizeof(eng_buf), "st_buf mirrors eng_buf");

static int a_iter_open(st_db *a, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    eng_iter_options o = {.lower = lo, .lower_len = ll, .upper = up, .upper_len = ul};
    return st_of(eng_iter_open(a->db, &o, (eng_iter **)out));
}
static int a_iter_first(st_iter *it) { return st_of(eng_iter_first((eng_iter *)it)); }
static int a_iter_next(st_iter *it) { return st_of(eng_iter_next((eng_iter *)it)); }
static int a_iter_last(st_iter *it) { return st_of(eng_iter_last((eng_iter *)it)); }
static int a_iter_prev(st_iter *it) { return st_of(eng_iter_prev((eng_iter *)it)); }
static const void *a_iter_key(st_iter *it, size_t *kl) { return eng_iter_key((eng_iter *)it, kl); }
static const void *a_iter_value(st_iter *it, size_t *vl) { return eng_iter_value((eng_iter *)it, vl); }
static void a_iter_close(st_iter *it) { eng_iter_close((eng_iter *)it); }

static int a_checkpoint(st_db *a) { return st_of(eng_checkpoint(a->db)); }

static int a_in_doubt(st_db *a) { return eng_poisoned(a->db); }

static int a_snapshot(st_db *a, st_snap **out, uint64_t *seq) {
    eng_snapshot *s;
    int rc = eng_snapshot_acquire(a->db, &s);
    if (rc) return st_of(rc);
    *out = (st_snap *)s;
    *seq = eng_snapshot_seq(s);
    return ST_OK;
}
static void a_snapshot_release(st_db *a, st_snap *s) { eng_snapshot_release(a->db, (eng_snapshot *)s); }
static int a_get_at(st_db *a, st_snap *s, const void *key, size_t klen, st_buf *val) {
    return st_of(eng_get_at(a->db, (const eng_snapshot *)s, key, klen, (eng_buf *)val));
}
static int a_iter_open_at(st_db *a, st_snap *s, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    eng_iter_options o = {
        .lower = lo, .lower_len = ll, .upper = up, .upper_len = ul, .snapshot = (const eng_snapshot *)s};
    return st_of(eng_iter_open(a->db, &o, (eng_iter **)out));
}
static int a_vacuum(st_db *a) { return st_of(eng_vacuum(a->db, NULL)); }

/* eng_verify delivers each problem to the handle's callback too: pass no
 * second one, so a report arrives once. */
static int a_verify(st_db *a, uint64_t *problems) { return st_of(eng_verify(a->db, NULL, NULL, problems)); }

typedef struct fwd {
    st_corruption_fn fn;
    void *ctx;
} fwd;
static void fwd_report(void *ctx, const eng_corruption *r) {
    fwd *f = ctx;
    st_corruption c = {eng_layer_name(r->layer), r->file, r->block, r->offset, r->detail, r->entry};
    if (f->fn) f->fn(f->ctx, &c);
}

static int a_verify_dir(const char *dir, const st_open_options *o, uint64_t *problems) {
    eng_options e;
    to_eng(o, &e, NULL);
    e.io_hooks = NULL;
    fwd f = {o->on_corruption, o->on_corruption_ctx};
    return st_of(eng_verify_dir(dir, &e, fwd_report, &f, problems));
}

/* A cache for check_log's replay, which a read-only open refuses to
 * spill (ENG_READONLY): the run's own, or more. */
#define CHECK_LOG_CACHE (64ull << 20)

static int a_check_log(const char *dir, const st_open_options *o, st_corruption_fn fn, void *ctx, st_log_extent *ext) {
    st_db a = {.fn = fn, .ctx = ctx};
    eng_options e;
    to_eng(o, &e, &a);
    e.io_hooks = NULL;
    e.read_only = 1;
    e.create_if_missing = 0;
    if (e.cache_size < CHECK_LOG_CACHE) e.cache_size = CHECK_LOG_CACHE;
    eng_db *db;
    int rc = eng_open(dir, &e, &db);
    if (rc != ENG_OK) return st_of(rc);
    eng_recovery_info ri;
    eng_stats s;
    eng_get_recovery_info(db, &ri);
    rc = eng_get_stats(db, &s);
    ext->redo = ri.redo_lsn;
    ext->end = ri.end_lsn;
    ext->segment_size = s.wal_segment_size;
    int crc = eng_close(db);
    return st_of(rc != ENG_OK ? rc : crc);
}

static void no_report(void *ctx, const eng_corruption *r) { (void)ctx, (void)r; }

/* The control file checked by the engine's reader first, then its fields
 * by format.h's layout; the block through page_verify, the check every
 * read of the pool makes (inspect.h). */
static int a_check_block(const char *dir, uint64_t block, st_corruption_fn fn, void *ctx, uint64_t *hwm) {
    insp_dir *d;
    int rc = insp_open(dir, &d);
    if (rc != ENG_OK) return st_of(rc);
    uint64_t seg, redo;
    rc = insp_read_control(d, &seg, &redo, no_report, NULL);
    insp_close(d);
    if (rc == ENG_CORRUPTION || rc == ENG_NOTFOUND) return ST_NOTFOUND;
    if (rc != ENG_OK) return st_of(rc);
    char path[4200];
    uint8_t ct[CONTROL_SIZE];
    snprintf(path, sizeof path, "%s/" CONTROL_NAME, dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? pread(fd, ct, sizeof ct, 0) : -1;
    if (fd >= 0) close(fd);
    if (got != (ssize_t)sizeof ct) return ST_IOERR;
    uint32_t ps, flags;
    memcpy(&ps, ct + CT_PAGE_SIZE_OFF, 4);
    memcpy(&flags, ct + CT_FLAGS_OFF, 4);
    memcpy(hwm, ct + CT_HWM_OFF, 8);
    uint8_t *page = ps >= 4096 && ps <= 16384 ? malloc(ps) : NULL;
    if (!page) return ST_NOTFOUND;
    snprintf(path, sizeof path, "%s/data", dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    got = fd >= 0 ? pread(fd, page, ps, (off_t)(block * ps)) : -1;
    if (fd >= 0) close(fd);
    int st = got == (ssize_t)ps ? ST_OK : got < 0 ? ST_IOERR : ST_NOTFOUND;
    page_problem pr;
    int zero = 0;
    if (st == ST_OK &&
        page_verify(page, ps, block, *hwm, (flags & CONTROL_FLAG_CHECKSUMS) != 0, &zero, &pr) != ENG_OK) {
        st_corruption c = {eng_layer_name(pr.layer),
                           "data",
                           (int64_t)block,
                           (int64_t)(block * ps) + (pr.offset >= 0 ? pr.offset : 0),
                           pr.detail,
                           pr.entry};
        if (fn) fn(ctx, &c);
        st = ST_CORRUPTION;
    }
    free(page);
    return st;
}

typedef struct why_buf {
    char *p;
    size_t cap;
} why_buf;
static void first_detail(void *ctx, const eng_corruption *r) {
    why_buf *w = ctx;
    if (w->cap && !w->p[0]) snprintf(w->p, w->cap, "%s: %s", r->file, r->detail);
}

static int a_probe_dir(const char *dir, char *why, size_t cap) {
    why_buf w = {why, cap};
    if (cap) why[0] = 0;
    return st_of(eng_probe_dir(dir, first_detail, &w));
}

static uint64_t a_durable(st_db *a) { return eng_durable_seq(a->db); }

static void a_recovery(st_db *a, st_recovery *out) {
    eng_recovery_info r;
    eng_get_recovery_info(a->db, &r);
    *out = (st_recovery){r.recovered_seq, r.records, r.trimmed};
}

static void a_stats(st_db *a, st_stats *out) {
    eng_stats s;
    memset(out, 0, sizeof *out);
    if (eng_get_stats(a->db, &s) != ENG_OK) return;
    *out = (st_stats){s.page_reads,  s.page_writes, s.cache_hits, s.cache_misses, s.evictions,
                      s.checkpoints, s.wal_bytes,   s.images,     s.durable_seq,  s.last_seq};
}

static void *a_native(st_db *a) { return a->db; }

/* ---- promises (promises.h) ----
 *
 * What our engine promises (docs/engine.md; docs/fault-classes.md gives
 * each class's detector): every class detected or repaired, except where
 * its options take the detector away.  Those rows are the oracle's
 * measured classes (vd_class_measured, rule V6): checksums off, full-page
 * writes off, per-KV protection off, and lost writes always (an old page
 * keeps a valid checksum); the oracle measures them instead of counting
 * them apart. */
#define EN_PAGES "docs/engine.md#pages-and-checksums-enginepageh-enginechecksumc"
#define EN_KV    "docs/engine.md#per-key-value-protection-enginekvproth"
#define EN_WAL   "docs/engine.md#write-path-wal-and-commit-enginewalh-enginepageoph"
#define EN_IO    "docs/engine.md#io-engineioh"
#define EN_REC   "docs/engine.md#recovery-enginerecoveryh"
static const st_promise ours_rows[] = {
    {"bitflip_page", "any", "data_checksums=0", ST_PROMISE_NONE, -1, EN_PAGES, "no page checksum to verify", NULL, 0},
    {"bitflip_page", "any", "", ST_PROMISE_DETECT, -1, EN_PAGES,
     "every page read is checked by its block-seeded checksum; the control file by its own", NULL, 0},
    {"bitflip_wal", "any", "", ST_PROMISE_DETECT, -1, EN_WAL,
     "every log sector checks itself (CRC32C), every record its checksum; a synced record is never trimmed as a "
     "torn tail (W3)",
     NULL, 0},
    {"bitflip_cache", "any", "block_protection_bytes_per_key=0", ST_PROMISE_NONE, -1, EN_KV,
     "no per-KV protection: a flipped cached page is written back under a fresh checksum", NULL, 0},
    {"bitflip_cache", "any", "", ST_PROMISE_DETECT, -1, EN_KV,
     "per-KV codes checked on every use and at write-back; escapes within the codes' Poisson bound", NULL, 0},
    {"bitflip_inflight", "any", "data_checksums=0", ST_PROMISE_NONE, -1, EN_PAGES, "no page checksum to verify", NULL,
     0},
    {"bitflip_inflight", "any", "", ST_PROMISE_DETECT, -1, EN_PAGES, "a page read in flipped fails its checksum", NULL,
     0},
    {"torn_write", "any", "data_checksums=0", ST_PROMISE_NONE, -1, EN_PAGES, "no page checksum to find the tear", NULL,
     0},
    {"torn_write", "any", "full_page_writes=0", ST_PROMISE_NONE, -1, EN_WAL, "no page image to rebuild the page", NULL,
     0},
    {"torn_write", "any", "", ST_PROMISE_REPAIR, -1, EN_WAL,
     "redo rebuilds a torn page from the full-page image logged before its first change since the checkpoint", NULL, 0},
    {"misdirected_write", "any", "data_checksums=0", ST_PROMISE_NONE, -1, EN_PAGES, "no page checksum to verify", NULL,
     0},
    {"misdirected_write", "any", "", ST_PROMISE_DETECT, -1, EN_PAGES,
     "the checksum is seeded with the block number: a page at the wrong block fails it", NULL, 0},
    {"lost_write", "any", "", ST_PROMISE_NONE, -1, EN_PAGES, "an old page keeps a valid checksum", NULL, 0},
    {"zero_page", "any", "data_checksums=0", ST_PROMISE_NONE, -1, EN_PAGES, "no page checksum to verify", NULL, 0},
    {"zero_page", "any", "", ST_PROMISE_DETECT, -1, EN_PAGES,
     "a zero page below the durable high-water mark is corruption (P5)", NULL, 0},
    {"read_error", "any", "", ST_PROMISE_DETECT, -1, EN_IO, "a failed read returns its error", NULL, 0},
    {"write_error", "any", "", ST_PROMISE_DETECT, -1, EN_IO,
     "a failed write returns its error and poisons the handle until it is reopened", NULL, 0},
    {"nospace", "any", "", ST_PROMISE_DETECT, -1, EN_IO,
     "ENOSPC returns its error and poisons the handle until it is reopened", NULL, 0},
    {"short_io", "any", "", ST_PROMISE_REPAIR, -1, EN_IO, "a short transfer is finished by the next call", NULL, 0},
    {"sync_error", "any", "", ST_PROMISE_DETECT, -1, EN_IO,
     "a failed fsync returns its error and poisons the handle; it is never retried as if the data were safe", NULL, 0},
    {"power_loss", "any", "", ST_PROMISE_REPAIR, 1, EN_REC,
     "recovery replays the log to an exact prefix of the history, every synced commit in it", NULL, 0},
    {"kill", "any", "", ST_PROMISE_REPAIR, 1, EN_REC,
     "recovery replays the log to an exact prefix of the history, every synced commit in it", NULL, 0},
};
static const char *const ours_options[] = {"data_checksums", "full_page_writes", "block_protection_bytes_per_key",
                                           NULL};
const st_promises st_promises_ours = {"ours", ours_rows, sizeof ours_rows / sizeof *ours_rows, ours_options, NULL};

const st_engine st_engine_ours = {
    .name = "engine",
    .planted_bug = eng_planted_bug,
    .check_options = check_options,
    .open = a_open,
    .close = a_close,
    .write = a_write,
    .in_doubt = a_in_doubt,
    .snapshot = a_snapshot,
    .snapshot_release = a_snapshot_release,
    .get_at = a_get_at,
    .iter_open_at = a_iter_open_at,
    .vacuum = a_vacuum,
    .get = a_get,
    .iter_open = a_iter_open,
    .iter_first = a_iter_first,
    .iter_next = a_iter_next,
    .iter_last = a_iter_last,
    .iter_prev = a_iter_prev,
    .iter_key = a_iter_key,
    .iter_value = a_iter_value,
    .iter_close = a_iter_close,
    .checkpoint = a_checkpoint,
    .verify = a_verify,
    .verify_dir = a_verify_dir,
    .check_block = a_check_block,
    .check_log = a_check_log,
    .probe_dir = a_probe_dir,
    .durable_seq = a_durable,
    .recovery = a_recovery,
    .stats = a_stats,
    .native = a_native,
    .native_status = st_of,
    .native_strerror = eng_strerror,
    .fault_point_count = eng_fault_point_count,
    .fault_point_name = eng_fault_point_name,
    .fault_point_what = eng_fault_point_what,
};
