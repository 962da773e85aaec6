/*
 * adapter_rocksdb.c -- the stress adapter (adapter.h) for RocksDB through
 * its C API (rocksdb/c.h, Debian's librocksdb-dev 7.8): the driver, the
 * oracle and their checks run unchanged against an engine nobody here
 * wrote.
 *
 * The database is RocksDB's directory at DIR, one column family.  The
 * driver's keys ("k" and digits: common/keys.h) are stored as they are;
 * the commit sequence is one reserved key below all of them:
 *
 *   "\0stress/seq" -> the sequence, 8 bytes little-endian
 *
 * Keys that start with a zero byte are the adapter's (a write of one is
 * ST_INVALID), and every iterator's lower bound is raised to "\1", so the
 * reserved key is never in the driver's key space.
 *
 *   RD1  every write is one WriteBatch with the reserved key set to
 *        last + 1, written under the handle's write mutex: sequence order
 *        is commit order, one number per batch (RocksDB's own write group
 *        then holds one batch; the order is worth more here);
 *   RD2  recovered_seq is the reserved key as the open found it (after
 *        RocksDB replayed its log under --rocksdb_wal_recovery_mode);
 *   RD3  a snapshot is rocksdb_create_snapshot; its sequence is the
 *        reserved key read at that snapshot: the last commit it sees;
 *   RD4  durable_seq: with --sync_mode commit or group every write has
 *        WriteOptions.sync (synced before it returns); with off, a write is
 *        durable once a checkpoint's rocksdb_flush_wal(sync) ran after it
 *        (under the write mutex, so the sequence read there is exact).
 *
 * Reads have verify_checksums on; the options have paranoid_checks on.
 * Errors come from RocksDB's status strings: "Corruption" -> ST_CORRUPTION
 * (reported through the callback: layer "page_checksum" for a checksum
 * mismatch, else "rocksdb"; the file the message names, else the log the
 * info log says it dropped bytes of; the 4 KiB block when the message's
 * checked range lies in one: locate), "IO error" -> ST_IOERR ("No space" in it:
 * ST_NOSPACE), "Resource busy"/"Busy" -> ST_BUSY, "Invalid argument" ->
 * ST_INVALID, "Not implemented" -> ST_NOTSUP.  A failed write is in doubt
 * when the failure was I/O or corruption (the batch may be in the log).
 *
 * What RocksDB's C API does not have, and this adapter does not fake:
 *   - no rocksdb_verify_checksum in 7.8's C API: verify is a full scan with
 *     verify_checksums and no cache fill, which stops at the first bad
 *     block (problems is 0 or 1) and checks the live SST files only, not
 *     the log;
 *   - rocksdb_compact_range returns no status: vacuum (compaction, which
 *     drops versions no snapshot needs) says ST_OTHER when RocksDB's
 *     background error count grew during it, else ST_OK;
 *   - no fault hooks, no fault points (count 0), no native handle for the
 *     fault library: check_options refuses every option that needs them
 *     (stress lets --sync_fault_injection through with --faults_via posix:
 *     the door writes the power-loss journal from the file calls);
 *   - no page reader on a closed directory: check_block NULL;
 *   - recovery's record count and torn-tail flag are unknown (0).
 * Options mapped: page_size -> block size, cache_size -> an LRU block
 * cache, data_checksums=0 -> kNoChecksum for new tables, wal_compression
 * zstd -> wal_compression, sync_mode as RD4, --rocksdb_wal_recovery_mode.
 * Our engine's other format and log options are refused when set away from
 * their defaults (checkpoint_wal_bytes too: RocksDB flushes when its
 * memtable fills, not by log volume).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter.h"
#include "promises.h"
#include "rocksdb_log.h"

static const char seq_key[] = "\0stress/seq";
#define SEQ_KEY_LEN (sizeof seq_key - 1)
#define LOWEST      "\1" /* every iterator's lowest bound: above the reserved keys */

struct st_db {
    rocksdb_t *r;
    rocksdb_options_t *opts;
    rocksdb_block_based_table_options_t *bbto;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *ro;
    rocksdb_writeoptions_t *wo;
    st_corruption_fn fn;
    void *ctx;
    char dir[4200];
    int sync;
    pthread_mutex_t write_mu;
    uint64_t last_seq; /* write_mu */
    _Atomic uint64_t last_pub, durable, checkpoints;
    uint64_t recovered;
};

struct st_snap {
    const rocksdb_snapshot_t *s;
    rocksdb_readoptions_t *ro;
};

struct st_iter {
    st_db *db;
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    char *lo, *up; /* the bounds' bytes: RocksDB keeps pointers to them */
    size_t ll, ul;
};

static __thread int tl_in_doubt;

/* Where a RocksDB message places a corruption (FILE: a path under DIR
 * anywhere in it, "... in PATH offset N size M", "in file PATH", "from
 * PATH offset N"; "" when it names none) and *BLOCK, the 4 KiB block of
 * that file the checked bytes lie in (the units of the door's damage,
 * faults/doordisk.c), or -1.  A table block's checksum covers its bytes
 * and 5-byte trailer, [N, N + M + 5): a block only when that range lies
 * in one 4 KiB block; one that straddles two (about as often as not) is
 * placed by its file alone, as is every message without "offset N size
 * M" (a log record's or a manifest's). */
static void locate(const char *msg, const char *dir, char *file, size_t cap, int64_t *block) {
    file[0] = 0;
    *block = -1;
    size_t dl = dir ? strlen(dir) : 0;
    const char *p = dl ? strstr(msg, dir) : NULL;
    while (p && p[dl] != '/') p = strstr(p + 1, dir);
    if (!p) {
        /* Some messages name the file without its path ("CURRENT file
         * does not end with newline"). */
        static const char *const bare[] = {"CURRENT", "IDENTITY", NULL};
        for (size_t i = 0; bare[i] && !file[0]; i++)
            if (strstr(msg, bare[i])) snprintf(file, cap, "%s", bare[i]);
        return;
    }
    p += dl + 1;
    snprintf(file, cap, "%.*s", (int)strcspn(p, " ,;"), p);
    const char *o = strstr(p, " offset "), *z = strstr(p, " size ");
    if (!o || !z) return;
    long long off = strtoll(o + 8, NULL, 10), size = strtoll(z + 6, NULL, 10);
    if (off >= 0 && size >= 0 && off / 4096 == (off + size + 4) / 4096) *block = off / 4096;
}

/* The log file RocksDB's info log (DIR/LOG, kept at warnings) last said
 * it dropped bytes of ("NNNNNN.log: dropping N bytes; Corruption: ..."):
 * a WAL replay's status names no file, its warning does. */
static void wal_named_by_info_log(const char *dir, char *file, size_t cap) {
    char p[4200], line[1024];
    snprintf(p, sizeof p, "%s/LOG", dir);
    FILE *f = fopen(p, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        const char *d = strstr(line, ".log: dropping ");
        if (!d) continue;
        const char *b = d;
        while (b > line && b[-1] != '/' && b[-1] != ' ') b--;
        snprintf(file, cap, "%.*s.log", (int)(d - b), b);
    }
    fclose(f);
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Where in DIR a record fails its CRC, for a checksum mismatch no message
 * names the file of (a manifest's replay, a log's in a read-only open,
 * which writes no info log): the manifest CURRENT names, then the logs in
 * the order they are replayed (rocksdb_log.h).  FILE and *BLOCK as locate
 * leaves them: the 4 KiB block only when the record lies in one; FILE
 * stays "" when every record holds. */
static void bad_record_in_dir(const char *dir, char *file, size_t cap, int64_t *block) {
    char p[4200], manifest[256] = "";
    snprintf(p, sizeof p, "%s/CURRENT", dir);
    FILE *c = fopen(p, "r");
    if (c && fgets(manifest, sizeof manifest, c)) manifest[strcspn(manifest, "\n")] = 0;
    if (c) fclose(c);
    char *names[256];
    size_t n = 0;
    if (manifest[0]) names[n++] = strdup(manifest);
    DIR *d = opendir(dir);
    size_t logs = n;
    for (struct dirent *e; d && (e = readdir(d)) != NULL && n < sizeof names / sizeof *names;)
        if (ends_with(e->d_name, ".log")) names[n++] = strdup(e->d_name);
    if (d) closedir(d);
    qsort(names + logs, n - logs, sizeof *names, by_name);
    for (size_t i = 0; i < n && !file[0]; i++) {
        uint64_t off, len;
        snprintf(p, sizeof p, "%s/%s", dir, names[i] ? names[i] : "");
        if (names[i] && st_rocksdb_log_bad_record(p, &off, &len) == 1) {
            snprintf(file, cap, "%s", names[i]);
            *block = off / 4096 == (off + len - 1) / 4096 ? (int64_t)(off / 4096) : -1;
        }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
}

/* ERR (RocksDB's status text, freed here) as an st_status, a corruption
 * reported through FN. */
static int st_err(st_corruption_fn fn, void *ctx, const char *dir, char *err) {
    if (!err) return ST_OK;
    int st = ST_OTHER;
    if (!strncmp(err, "Corruption", 10)) {
        st = ST_CORRUPTION;
        if (fn) {
            char file[512];
            int64_t block;
            locate(err, dir, file, sizeof file, &block);
            if (!file[0] && dir) wal_named_by_info_log(dir, file, sizeof file);
            if (!file[0] && dir && strstr(err, "checksum mismatch")) bad_record_in_dir(dir, file, sizeof file, &block);
            /* A checksum that failed (a table block's, a log or manifest
             * record's) is the check page damage must meet (oracle V1d). */
            const char *layer = strstr(err, "checksum mismatch") ? "page_checksum" : "rocksdb";
            st_corruption c = {layer, file, block, -1, err, -1};
            fn(ctx, &c);
        }
    } else if (!strncmp(err, "IO error", 8)) {
        st = strstr(err, "No space") || strstr(err, "no space") ? ST_NOSPACE : ST_IOERR;
    } else if (!strncmp(err, "Resource busy", 13) || !strncmp(err, "Busy", 4)) {
        st = ST_BUSY;
    } else if (!strncmp(err, "Invalid argument", 16)) {
        st = ST_INVALID;
    } else if (!strncmp(err, "Not implemented", 15)) {
        st = ST_NOTSUP;
    }
    rocksdb_free(err);
    return st;
}
#define ST_ERR(db, err) st_err((db)->fn, (db)->ctx, (db)->dir, (err))

/* ERR of an open, as ST_ERR takes it, but for one I/O error that is the
 * database's own damage: the MANIFEST that CURRENT names does not exist
 * (ENOENT), which RocksDB reports as "IO error: No such file or
 * directory" though no device failed.  Only CURRENT names the manifest
 * to open: the corruption is reported there (a damaged CURRENT names a
 * file that never was; a lost manifest is no less a broken database). */
static int open_err(st_db *db, char *err) {
    if (!err || strncmp(err, "IO error", 8) || !strstr(err, "No such file") || !strstr(err, "MANIFEST-"))
        return ST_ERR(db, err);
    if (db->fn) {
        st_corruption c = {"rocksdb", "CURRENT", -1, -1, err, -1};
        db->fn(db->ctx, &c);
    }
    rocksdb_free(err);
    return ST_CORRUPTION;
}

static const char *const meaningless[] = {"full_page_writes",
                                          "wal_log_hints",
                                          "hint_fpi",
                                          "vacuum_freeze_min_age",
                                          "block_protection_bytes_per_key",
                                          "kv_lazy_leaves",
                                          "io_backend",
                                          "wal_segment_size",
                                          "first_xid",
                                          "checkpoint_wal_bytes",
                                          "sqlite_journal_mode",
                                          "sqlite_synchronous",
                                          NULL};

static int check_options(const st_open_options *o, char *why, size_t cap) {
    int st = st_refuse_options(o, "rocksdb", "RocksDB", meaningless, NULL, why, cap);
    if (st != ST_OK) return st;
    if (o->rocksdb_wal_recovery_mode < 0 || o->rocksdb_wal_recovery_mode > 3) {
        snprintf(why, cap, "--rocksdb_wal_recovery_mode: %d is not 0..3", o->rocksdb_wal_recovery_mode);
        return ST_NOTSUP;
    }
    return ST_OK;
}

static void put_u64(char b[8], uint64_t v) {
    for (int i = 0; i < 8; i++) b[i] = (char)(v >> (8 * i));
}

/* The reserved key through RO: 0 when absent (a new database). */
static int read_seq(st_db *db, const rocksdb_readoptions_t *ro, uint64_t *seq) {
    char *err = NULL;
    size_t vl = 0;
    char *v = rocksdb_get(db->r, ro, seq_key, SEQ_KEY_LEN, &vl, &err);
    int st = ST_ERR(db, err);
    *seq = 0;
    if (st == ST_OK && v && vl != 8) {
        st_corruption c = {"rocksdb", "", -1, -1, "the commit sequence key holds no 8-byte number", -1};
        if (db->fn) db->fn(db->ctx, &c);
        st = ST_CORRUPTION;
    } else if (st == ST_OK && v) {
        for (int i = 0; i < 8; i++) *seq |= (uint64_t)(uint8_t)v[i] << (8 * i);
    }
    rocksdb_free(v);
    return st;
}

/* ---- open and close ---- */

static void release(st_db *db) {
    if (db->r) rocksdb_close(db->r);
    if (db->ro) rocksdb_readoptions_destroy(db->ro);
    if (db->wo) rocksdb_writeoptions_destroy(db->wo);
    if (db->opts) rocksdb_options_destroy(db->opts);
    if (db->bbto) rocksdb_block_based_options_destroy(db->bbto);
    if (db->cache) rocksdb_cache_destroy(db->cache);
    pthread_mutex_destroy(&db->write_mu);
    free(db);
}

/* The options of O as RocksDB's, in DB's fields. */
static void make_options(st_db *db, const st_open_options *o) {
    db->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(db->opts, 1);
    rocksdb_options_set_paranoid_checks(db->opts, 1);
    rocksdb_options_set_wal_recovery_mode(db->opts, o->rocksdb_wal_recovery_mode);
    rocksdb_options_set_info_log_level(db->opts, 2); /* warnings and worse: the LOG file stays small */
    rocksdb_options_set_keep_log_file_num(db->opts, 4);
    if (o->wal_compression) rocksdb_options_set_wal_compression(db->opts, 0x07); /* kZSTD */
    db->bbto = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(db->bbto, o->page_size ? o->page_size : 4096);
    db->cache = rocksdb_cache_create_lru(o->cache_size ? o->cache_size : (8u << 20));
    rocksdb_block_based_options_set_block_cache(db->bbto, db->cache);
    if (!o->data_checksums) rocksdb_block_based_options_set_checksum(db->bbto, 0); /* kNoChecksum */
    rocksdb_options_set_block_based_table_factory(db->opts, db->bbto);
}

static int a_open(const char *dir, const st_open_options *o, st_db **out) {
    *out = NULL;
    st_db *db = calloc(1, sizeof *db);
    if (!db) return ST_OTHER;
    snprintf(db->dir, sizeof db->dir, "%s", dir);
    db->fn = o->on_corruption;
    db->ctx = o->on_corruption_ctx;
    db->sync = o->sync_mode != 2;
    pthread_mutex_init(&db->write_mu, NULL);
    make_options(db, o);
    db->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_verify_checksums(db->ro, 1);
    db->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(db->wo, (unsigned char)db->sync);
    char *err = NULL;
    db->r = rocksdb_open(db->opts, dir, &err);
    int st = open_err(db, err);
    if (st == ST_OK && !db->r) st = ST_OTHER;
    if (st == ST_OK) st = read_seq(db, db->ro, &db->recovered);
    if (st != ST_OK) {
        release(db);
        return st;
    }
    /* What the open found is the oracle's new base either way (RD2). */
    db->last_seq = db->recovered;
    atomic_store(&db->last_pub, db->recovered);
    atomic_store(&db->durable, db->recovered);
    *out = db;
    return ST_OK;
}

static int a_close(st_db *db) {
    if (!db) return ST_OK;
    /* rocksdb_close reports nothing: sync what a --sync_mode off run left
     * in the log first, and say if that failed. */
    char *err = NULL;
    if (!db->sync) rocksdb_flush_wal(db->r, 1, &err);
    int st = ST_ERR(db, err);
    release(db);
    return st;
}

/* ---- writes (RD1) ---- */

static int a_write(st_db *db, const st_op *ops, size_t n, uint64_t *seq) {
    tl_in_doubt = 0;
    for (size_t i = 0; i < n; i++)
        if (!ops[i].klen || !((const char *)ops[i].key)[0]) return ST_INVALID; /* the adapter's key space */
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    for (size_t i = 0; i < n; i++) {
        if (ops[i].kind == ST_PUT)
            rocksdb_writebatch_put(b, ops[i].key, ops[i].klen, ops[i].vlen ? ops[i].val : "", ops[i].vlen);
        else
            rocksdb_writebatch_delete(b, ops[i].key, ops[i].klen);
    }
    char v[8], *err = NULL;
    pthread_mutex_lock(&db->write_mu);
    uint64_t s = db->last_seq + 1;
    put_u64(v, s);
    rocksdb_writebatch_put(b, seq_key, SEQ_KEY_LEN, v, 8);
    rocksdb_write(db->r, db->wo, b, &err);
    int st = ST_ERR(db, err);
    tl_in_doubt = st == ST_IOERR || st == ST_NOSPACE || st == ST_CORRUPTION || st == ST_OTHER;
    if (st == ST_OK || tl_in_doubt) { /* in doubt: the number may be in the log; never given again */
        db->last_seq = s;
        atomic_store(&db->last_pub, s);
    }
    if (st == ST_OK && db->sync) atomic_store(&db->durable, s); /* RD4 */
    pthread_mutex_unlock(&db->write_mu);
    rocksdb_writebatch_destroy(b);
    if (st == ST_OK) *seq = s;
    return st;
}

static int a_in_doubt(st_db *db) {
    (void)db;
    return tl_in_doubt;
}

/* ---- reads ---- */

static int get_with(st_db *db, const rocksdb_readoptions_t *ro, const void *key, size_t klen, st_buf *val) {
    if (!klen || !((const char *)key)[0]) return ST_NOTFOUND; /* never the driver's */
    char *err = NULL;
    size_t vl = 0;
    char *v = rocksdb_get(db->r, ro, key, klen, &vl, &err);
    int st = ST_ERR(db, err);
    if (st != ST_OK) {
        rocksdb_free(v);
        return st;
    }
    if (!v) return ST_NOTFOUND;
    if (val->cap < vl || !val->data) {
        void *p = realloc(val->data, vl ? vl : 1);
        if (!p) {
            rocksdb_free(v);
            return ST_OTHER;
        }
        val->data = p, val->cap = vl ? vl : 1;
    }
    memcpy(val->data, v, vl);
    val->len = vl;
    rocksdb_free(v);
    return ST_OK;
}

static int a_get(st_db *db, const void *key, size_t klen, st_buf *val) { return get_with(db, db->ro, key, klen, val); }

static int iter_with(st_db *db, const rocksdb_snapshot_t *snap, const void *lo, size_t ll, const void *up, size_t ul,
                     st_iter **out) {
    *out = NULL;
    st_iter *it = calloc(1, sizeof *it);
    if (!it) return ST_OTHER;
    it->db = db;
    if (!lo || !ll || memcmp(lo, LOWEST, 1) < 0) lo = LOWEST, ll = 1; /* R: the reserved keys stay out */
    it->lo = malloc(ll);
    it->up = up ? malloc(ul ? ul : 1) : NULL;
    if (!it->lo || (up && !it->up)) {
        free(it->lo), free(it->up), free(it);
        return ST_OTHER;
    }
    memcpy(it->lo, lo, ll);
    it->ll = ll;
    if (up) memcpy(it->up, up, ul), it->ul = ul;
    it->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_verify_checksums(it->ro, 1);
    if (snap) rocksdb_readoptions_set_snapshot(it->ro, snap);
    rocksdb_readoptions_set_iterate_lower_bound(it->ro, it->lo, it->ll);
    if (up) rocksdb_readoptions_set_iterate_upper_bound(it->ro, it->up, it->ul);
    it->it = rocksdb_create_iterator(db->r, it->ro);
    *out = it;
    return ST_OK;
}

static int a_iter_open(st_db *db, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    return iter_with(db, NULL, lo, ll, up, ul, out);
}

static int iter_status(st_iter *it) {
    if (rocksdb_iter_valid(it->it)) return ST_OK;
    char *err = NULL;
    rocksdb_iter_get_error(it->it, &err);
    int st = ST_ERR(it->db, err);
    return st == ST_OK ? ST_NOTFOUND : st;
}
static int a_iter_first(st_iter *it) {
    rocksdb_iter_seek(it->it, it->lo, it->ll);
    return iter_status(it);
}
static int a_iter_next(st_iter *it) {
    rocksdb_iter_next(it->it);
    return iter_status(it);
}
/* SeekToLast honours iterate_upper_bound (the largest key below it), and
 * Prev stops at iterate_lower_bound. */
static int a_iter_last(st_iter *it) {
    rocksdb_iter_seek_to_last(it->it);
    return iter_status(it);
}
static int a_iter_prev(st_iter *it) {
    rocksdb_iter_prev(it->it);
    return iter_status(it);
}
static const void *a_iter_key(st_iter *it, size_t *kl) { return rocksdb_iter_key(it->it, kl); }
static const void *a_iter_value(st_iter *it, size_t *vl) { return rocksdb_iter_value(it->it, vl); }
static void a_iter_close(st_iter *it) {
    if (!it) return;
    rocksdb_iter_destroy(it->it);
    rocksdb_readoptions_destroy(it->ro);
    free(it->lo);
    free(it->up);
    free(it);
}

/* ---- snapshots (RD3) ---- */

static int a_snapshot(st_db *db, st_snap **out, uint64_t *seq) {
    *out = NULL;
    st_snap *s = calloc(1, sizeof *s);
    if (!s) return ST_OTHER;
    s->s = rocksdb_create_snapshot(db->r);
    s->ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_verify_checksums(s->ro, 1);
    rocksdb_readoptions_set_snapshot(s->ro, s->s);
    int st = read_seq(db, s->ro, seq);
    if (st != ST_OK) {
        rocksdb_readoptions_destroy(s->ro);
        rocksdb_release_snapshot(db->r, s->s);
        free(s);
        return st;
    }
    *out = s;
    return ST_OK;
}

static void a_snapshot_release(st_db *db, st_snap *s) {
    if (!s) return;
    rocksdb_readoptions_destroy(s->ro);
    rocksdb_release_snapshot(db->r, s->s);
    free(s);
}

static int a_get_at(st_db *db, st_snap *s, const void *key, size_t klen, st_buf *val) {
    return get_with(db, s ? s->ro : db->ro, key, klen, val);
}

static int a_iter_open_at(st_db *db, st_snap *s, const void *lo, size_t ll, const void *up, size_t ul, st_iter **out) {
    return iter_with(db, s ? s->s : NULL, lo, ll, up, ul, out);
}

/* ---- checkpoint, vacuum, verify ---- */

static int a_checkpoint(st_db *db) {
    char *err = NULL;
    pthread_mutex_lock(&db->write_mu);
    uint64_t s = db->last_seq;
    rocksdb_flush_wal(db->r, 1, &err);
    int st = ST_ERR(db, err);
    if (st == ST_OK) atomic_store(&db->durable, s); /* RD4: every write before it is synced */
    pthread_mutex_unlock(&db->write_mu);
    if (st != ST_OK) return st;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush(db->r, fo, &err);
    rocksdb_flushoptions_destroy(fo);
    st = ST_ERR(db, err);
    if (st == ST_OK) atomic_fetch_add(&db->checkpoints, 1);
    return st;
}

static uint64_t bg_errors(st_db *db) {
    uint64_t n = 0;
    return rocksdb_property_int(db->r, "rocksdb.background-errors", &n) == 0 ? n : 0;
}

static int a_vacuum(st_db *db) {
    uint64_t before = bg_errors(db);
    rocksdb_compact_range(db->r, NULL, 0, NULL, 0);
    return bg_errors(db) > before ? ST_OTHER : ST_OK;
}

/* Every key of R (the reserved one too) read with checksums verified and
 * no cache fill: each block comes from the file. */
static int scan_all(rocksdb_t *r, st_corruption_fn fn, void *ctx, const char *dir, uint64_t *problems) {
    *problems = 0;
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_readoptions_set_verify_checksums(ro, 1);
    rocksdb_readoptions_set_fill_cache(ro, 0);
    rocksdb_iterator_t *it = rocksdb_create_iterator(r, ro);
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {}
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    int st = st_err(fn, ctx, dir, err);
    rocksdb_iter_destroy(it);
    rocksdb_readoptions_destroy(ro);
    if (st == ST_CORRUPTION) *problems = 1;
    return st;
}

static int a_verify(st_db *db, uint64_t *problems) { return scan_all(db->r, db->fn, db->ctx, db->dir, problems); }

static int a_verify_dir(const char *dir, const st_open_options *o, uint64_t *problems) {
    *problems = 0;
    st_db *db = calloc(1, sizeof *db);
    if (!db) return ST_OTHER;
    snprintf(db->dir, sizeof db->dir, "%s", dir);
    db->fn = o->on_corruption;
    db->ctx = o->on_corruption_ctx;
    pthread_mutex_init(&db->write_mu, NULL);
    make_options(db, o);
    rocksdb_options_set_create_if_missing(db->opts, 0);
    char *err = NULL;
    db->r = rocksdb_open_for_read_only(db->opts, dir, 0, &err);
    int st = open_err(db, err);
    if (st == ST_CORRUPTION) *problems = 1;
    if (st == ST_OK && db->r) st = scan_all(db->r, db->fn, db->ctx, dir, problems);
    release(db);
    return st;
}

/* A directory without RocksDB's CURRENT file that holds files holds
 * another engine's database: opening would create a new one beside it. */
static int a_probe_dir(const char *dir, char *why, size_t cap) {
    if (cap) why[0] = 0;
    char p[4200];
    snprintf(p, sizeof p, "%s/CURRENT", dir);
    if (access(p, F_OK) == 0) return ST_OK;
    DIR *d = opendir(dir);
    if (!d) return ST_NOTFOUND;
    struct dirent *e;
    int other = 0;
    while ((e = readdir(d)) && !other) other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    if (!other) return ST_NOTFOUND;
    snprintf(why, cap, "no CURRENT file, but the directory holds other files (another engine's database?)");
    return ST_CORRUPTION;
}

static uint64_t a_durable(st_db *db) { return atomic_load(&db->durable); }

static void a_recovery(st_db *db, st_recovery *out) { *out = (st_recovery){db->recovered, 0, 0}; }

static void a_stats(st_db *db, st_stats *out) {
    memset(out, 0, sizeof *out);
    out->checkpoints = atomic_load(&db->checkpoints);
    out->durable_seq = atomic_load(&db->durable);
    out->last_seq = atomic_load(&db->last_pub);
}

static void *a_native(st_db *db) {
    (void)db;
    return NULL; /* nothing the fault library could use */
}
static int a_native_status(int rc) { return rc; } /* the adapter's codes are st_status already */
static const char *a_strerror(int rc) { return st_status_name(rc); }
static size_t no_points(void) { return 0; }
static const char *no_point(size_t i) {
    (void)i;
    return "";
}

/* RocksDB's files by name (file/filename.cc): tables NNNNNN.sst, logs
 * NNNNNN.log, and what says which of them are live (MANIFEST-NNNNNN,
 * CURRENT and its NNNNNN.dbtmp, OPTIONS-NNNNNN, IDENTITY); the info log
 * (LOG, LOG.old.*) and LOCK are none of them. */
static const char *a_file_kind(const char *rel) {
    if (ends_with(rel, ".sst")) return "data";
    if (ends_with(rel, ".log")) return "wal";
    if (!strncmp(rel, "MANIFEST-", 9) || !strcmp(rel, "CURRENT") || !strncmp(rel, "OPTIONS-", 8) ||
        !strcmp(rel, "IDENTITY") || ends_with(rel, ".dbtmp"))
        return "control";
    return NULL;
}

/* ---- promises (promises.h) ----
 *
 * What RocksDB's documentation promises, for the options this adapter
 * draws or sets: --rocksdb_wal_recovery_mode, --sync_mode
 * (WriteOptions.sync), --data_checksums (kNoChecksum for new tables);
 * paranoid_checks and verify_checksums are always on here.  A row per
 * page: the WAL recovery modes (crashes, the log read back at open), the
 * background error handler (failed writes and syncs), the iterator's and
 * Get's statuses (failed reads), options.h (what mode 0 and 1 refuse). */
#define RK_WAL   "https://github.com/facebook/rocksdb/wiki/WAL-Recovery-Modes"
#define RK_BG    "https://github.com/facebook/rocksdb/wiki/Background-Error-Handling"
#define RK_ITER  "https://github.com/facebook/rocksdb/wiki/Iterator"
#define RK_OPTS  "https://github.com/facebook/rocksdb/blob/v7.8.3/include/rocksdb/options.h"
#define RK_TABLE "https://github.com/facebook/rocksdb/wiki/Rocksdb-BlockBasedTable-Format"
#define RK_FILE  "https://github.com/facebook/rocksdb/wiki/Full-File-Checksum-and-Checksum-Handoff"
#define RK_POSIX "https://github.com/facebook/rocksdb/blob/v7.8.3/env/io_posix.cc"
#define RK_LOG   "https://github.com/facebook/rocksdb/wiki/Write-Ahead-Log-File-Format"
#define RK_LOGRD "https://github.com/facebook/rocksdb/blob/v7.8.3/db/log_reader.cc"
static const st_promise rocksdb_rows[] = {
    {"power_loss", "any", "rocksdb_wal_recovery_mode=1", ST_PROMISE_DETECT, 1, RK_WAL,
     "kAbsoluteConsistency: any IO error or incomplete record in the log, a crash's torn tail included, fails the "
     "open",
     NULL, 0},
    {"power_loss", "any", "rocksdb_wal_recovery_mode=0,sync_mode=off", ST_PROMISE_DETECT, 1, RK_OPTS,
     "kTolerateCorruptedTailRecords tolerates an incomplete record at the log's tail only; a hole that lost "
     "unsynced writes leave before it is a corruption, and the open is refused",
     NULL, 0},
    {"power_loss", "any", "rocksdb_wal_recovery_mode=3,sync_mode=off", ST_PROMISE_NONE, 1, RK_WAL,
     "kSkipAnyCorruptedRecords ignores any error in the log and replays what follows a hole: recovery after a "
     "disaster, no consistency promised",
     NULL, 0},
    {"power_loss", "any", "rocksdb_wal_recovery_mode=2,sync_mode=off", ST_PROMISE_REPAIR, 1, RK_WAL,
     "kPointInTimeRecovery stops the replay at the first inconsistency: the state of a point in time",
     "docs/findings/rocksdb-point-in-time-after-unsynced-writes.md", 0},
    {"power_loss", "any", "", ST_PROMISE_REPAIR, 1, RK_WAL,
     "every write acknowledged with WriteOptions.sync is in the log and replayed; an incomplete last record of "
     "the crash is dropped",
     NULL, 0},
    {"kill", "any", "", ST_PROMISE_REPAIR, 1, RK_WAL,
     "a killed process leaves every committed record in the log (the OS keeps what was written); replayed at "
     "open",
     NULL, 0},
    {"torn_write", "wal", "rocksdb_wal_recovery_mode=0|1", ST_PROMISE_DETECT, -1, RK_OPTS,
     "a record torn at 512-byte sectors fails its CRC, a corruption: modes 0 and 1 refuse to open (mode 0 "
     "tolerates a record cut short, not a corrupt one)",
     NULL, 0},
    {"torn_write", "control", "", ST_PROMISE_DETECT, -1, RK_LOGRD,
     "the MANIFEST is read back with the log reader and its CRCs in every recovery mode: a last record torn "
     "inside the file's size fails its CRC and the open is refused (Corruption); one cut short by the file's end "
     "is taken for a crash's and dropped",
     "docs/findings/rocksdb-torn-manifest-record-refuses-the-open.md", 0},
    {"torn_write", "any", "", ST_PROMISE_REPAIR, -1, RK_WAL,
     "a torn log record fails its CRC: point in time recovery stops before it, mode 3 skips it; tables and "
     "manifest records count only once synced",
     NULL, 0},
    {"bitflip_page", "data", "data_checksums=0", ST_PROMISE_NONE, -1, RK_TABLE,
     "kNoChecksum: the table's blocks carry no checksum to verify", NULL, 0},
    {"bitflip_page", "data", "", ST_PROMISE_DETECT, -1, RK_FILE,
     "every block of a table carries a checksum in its trailer, verified when the block is read (verify_checksums "
     "on here); the whole-file checksum needs a generator this adapter sets none of",
     NULL, 0},
    {"bitflip_page", "wal", "rocksdb_wal_recovery_mode=1", ST_PROMISE_DETECT, -1, RK_LOG,
     "every log record carries a CRC32C of its type and payload; kAbsoluteConsistency fails the open on a record "
     "that fails it or is cut short (the info log names the file: a report at the file, no block)",
     NULL, 0},
    {"bitflip_page", "any", "", ST_PROMISE_NONE, -1, RK_LOG,
     "the log's and the MANIFEST's records carry a CRC32C, but the other recovery modes take a record that "
     "fails it at the log's end for a crash's (mode 0), stop the replay there (point in time) or skip it (mode "
     "3), without an error; CURRENT, IDENTITY and OPTIONS carry no checksum",
     NULL, 0},
    {"bitflip_inflight", "data", "data_checksums=0", ST_PROMISE_NONE, -1, RK_TABLE,
     "kNoChecksum: a block flipped on its way to or from the disk carries no checksum to verify", NULL, 0},
    {"bitflip_inflight", "data", "", ST_PROMISE_DETECT, -1, RK_FILE,
     "a block's trailer checksum is computed before the write and verified after every read (verify_checksums on "
     "here): a bit flipped on the way out or back fails it when the block is read",
     NULL, 0},
    {"bitflip_inflight", "wal", "rocksdb_wal_recovery_mode=1", ST_PROMISE_DETECT, -1, RK_LOG,
     "a log record flipped on its way out or back fails its CRC32C when the log is replayed: kAbsoluteConsistency "
     "fails the open",
     NULL, 0},
    {"bitflip_inflight", "any", "", ST_PROMISE_NONE, -1, RK_LOG,
     "the other recovery modes end the replay at, or skip, a log record that fails its CRC without an error; "
     "CURRENT, IDENTITY and OPTIONS carry no checksum",
     NULL, 0},
    {"zero_page", "data", "data_checksums=0", ST_PROMISE_NONE, -1, RK_TABLE,
     "kNoChecksum: the table's blocks carry no checksum to verify", NULL, 0},
    {"zero_page", "data", "", ST_PROMISE_DETECT, -1, RK_FILE,
     "a zeroed stretch of a table fails the checksum in its block's trailer when the block is read (verify_checksums "
     "on here), or the footer's magic number",
     NULL, 0},
    {"zero_page", "any", "", ST_PROMISE_NONE, -1, RK_LOGRD,
     "a record header of zeros in the log or the MANIFEST is taken for preallocated space: the rest of its 32 KiB "
     "block is skipped without an error, in every recovery mode",
     NULL, 0},
    {"bitflip_wal", "wal", "rocksdb_wal_recovery_mode=2|3", ST_PROMISE_NONE, -1, RK_WAL,
     "a record that fails its CRC ends the replay (point in time) or is skipped (mode 3): records synced after "
     "it may be dropped without an error",
     NULL, 0},
    {"bitflip_wal", "wal", "", ST_PROMISE_DETECT, -1, RK_WAL,
     "modes 0 and 1 take a corrupt record before the log's tail for corruption: the open fails", NULL, 0},
    {"read_error", "wal", "rocksdb_wal_recovery_mode=3", ST_PROMISE_NONE, -1, RK_WAL,
     "kSkipAnyCorruptedRecords: any IO error while reading the log is ignored", NULL, 0},
    {"read_error", "wal", "rocksdb_wal_recovery_mode=2", ST_PROMISE_NONE, -1, RK_WAL,
     "kPointInTimeRecovery: the replay is stopped after an IO error, to the point in time before it", NULL, 0},
    {"read_error", "wal", "", ST_PROMISE_DETECT, -1, RK_WAL,
     "modes 0 and 1 take an IO error while reading the log for corruption: the open fails", NULL, 0},
    {"read_error", "any", "", ST_PROMISE_DETECT, -1, RK_ITER,
     "Get and Iterator::status() return the error of the read: I/O errors, checksum mismatches", NULL, 0},
    {"write_error", "wal", "", ST_PROMISE_DETECT, -1, RK_BG,
     "a failed write of the log fails the write and sets the background error: every later write fails until the "
     "DB is reopened",
     NULL, 0},
    {"write_error", "any", "", ST_PROMISE_REPAIR, -1, RK_OPTS,
     "a failed flush, compaction or manifest write sets the background error (paranoid_checks on); a failed "
     "options file is only logged (fail_if_options_file_error is false), a failed delete of an obsolete file "
     "leaves it behind",
     NULL, 0},
    {"nospace", "wal", "", ST_PROMISE_DETECT, -1, RK_BG,
     "out of space in a write of the log fails the write and sets the background error", NULL, 0},
    {"nospace", "any", "", ST_PROMISE_REPAIR, -1, RK_BG,
     "out of space in a flush or compaction sets the background error (recovered automatically once space "
     "returns); the options file's failure is only logged",
     NULL, 0},
    {"short_io", "any", "", ST_PROMISE_REPAIR, -1, RK_POSIX,
     "PosixWrite and PosixPositionedWrite call write or pwrite again until no byte of the range is left, "
     "PosixRandomAccessFile::Read calls pread again until the range is read or the file ends: a short count is "
     "finished by the next call",
     NULL, 0},
    {"sync_error", "wal", "", ST_PROMISE_DETECT, -1, RK_BG,
     "a failed sync of the log always sets the background error: the write fails", NULL, 0},
    {"sync_error", "any", "", ST_PROMISE_REPAIR, -1, RK_BG,
     "a failed sync of a flush, compaction or manifest sets the background error (paranoid_checks on); the options "
     "file's is only logged",
     NULL, 0},
};
static const char *const rocksdb_options[] = {"rocksdb_wal_recovery_mode", "sync_mode", "data_checksums", NULL};
static const char *const rocksdb_door[] = {
    "power_loss", "kill",         "read_error", "write_error",      "nospace", "short_io",
    "sync_error", "bitflip_page", "zero_page",  "bitflip_inflight", NULL};
const st_promises st_promises_rocksdb = {"rocksdb", rocksdb_rows, sizeof rocksdb_rows / sizeof *rocksdb_rows,
                                         rocksdb_options, rocksdb_door};

/* RocksDB's version header is C++ (rocksdb/version.h) and its C API has
 * no call that returns the version: the Makefile reads the header's
 * ROCKSDB_MAJOR, _MINOR and _PATCH and passes them in.  The library's
 * soname (librocksdb.so.MAJOR.MINOR) holds the patch level alone free. */
#ifndef ST_ROCKSDB_VERSION
#define ST_ROCKSDB_VERSION "unknown"
#endif
static const char *a_library_version(void) { return ST_ROCKSDB_VERSION; }

const st_engine st_engine_rocksdb = {
    .name = "rocksdb",
    .planted_bug = NULL,
    .library_version = a_library_version,
    .file_kind = a_file_kind,
    .file_kinds = "data,wal,control",
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
    .check_block = NULL,
    .probe_dir = a_probe_dir,
    .durable_seq = a_durable,
    .recovery = a_recovery,
    .stats = a_stats,
    .native = a_native,
    .native_status = a_native_status,
    .native_strerror = a_strerror,
    .fault_point_count = no_points,
    .fault_point_name = no_point,
    .fault_point_what = no_point,
};
