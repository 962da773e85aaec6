/*
 * workload.c: the workers: randomness, keys and values, operations,
 * snapshots, scans, doubts, open and reopen of the handle.
 * Internal to the stress driver (stress_int.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oracle/report_line.h"
#include "promises.h"
#include "stress_int.h"

double st_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- randomness: one splitmix64 stream per thread (common/rng.h) ---- */

static uint64_t rnd(worker *w) { return rng_next(&w->rng); }
static uint64_t below(worker *w, uint64_t n) { return rng_below(&w->rng, n); }
static int one_in(worker *w, uint64_t n) { return n && below(w, n) == 0; }

/* ---- values (keys: common/keys.h's key_format) ---- */

static size_t vlen_of(const st_value_sizes *sz, uint64_t key, uint32_t v) {
    if (sz->large_one_in && rng_mix64(key * 0x100000001b3ull ^ ((uint64_t)v << 17)) % sz->large_one_in == 0)
        return orc_value_len(key, v, sz->vmax + 1 > 4096 ? sz->vmax + 1 : 4096, sz->large_max);
    return orc_value_len(key, v, sz->vmin, sz->vmax);
}

/* 1 if BUF is exactly the value of (key, v). */
int st_value_is(const st_value_sizes *sz, uint64_t key, uint32_t v, const uint8_t *buf, size_t len) {
    return orc_value_is(key, v, buf, len, vlen_of(sz, key, v));
}

/* Open the database, retrying injected failures (each attempt is a call
 * of W's, S4).  Returns the status. */
int st_open_db(worker *w) {
    st_driver *d = w->d;
    int st = ST_OTHER;
    if (!d->small_noted) st_note_small_files(d);
    for (int attempt = 0; attempt < 8; attempt++) {
        if (attempt == 4 && d->flt) flt_pause(d->flt, 1); /* enough: let it open */
        uint64_t op = d->epoch << 32 | ++w->calls;
        if (d->flt) flt_op(d->flt, op);
        st = d->E->open(d->o.db, &d->eo, &d->db);
        if (st == ST_OK) break;
        if (d->flt) st_observe(d, VD_OBS_ERROR, w->id, op, st, 0, 0);
        if (st == ST_CORRUPTION || st == ST_BUSY || st == ST_INVALID || st == ST_NOTSUP) break;
    }
    if (d->flt) flt_pause(d->flt, 0);
    return st;
}

/* Close and open again (S3: the caller holds the handle exclusively).
 * POISONED: the handle failed a write (recovery will replay).  TYPE: the op
 * the report counts it as, OP_REOPEN or OP_RESTART.
 *
 * A restart (trace op `restart`, never drawn) is what the end of one stress
 * process and the start of the next do to the database, in one process: a
 * shrinker folds a step that creates the database into the step after it
 * (crashtest.py shrink K26) and puts one where the first process ended.
 * The end's reads (st_read_everything, faults paused as in settle()) come
 * before the close: they change what the close writes (a reader sets hint
 * bits, which dirty their pages).  A reopen's check comes after its open,
 * and the pages it dirties are written unsynced in the next ops: planted
 * bug redo-reapplies-equal-lsn's fold with a reopen left 32 unsynced
 * writes where the two processes left 8, and passed.  The next process
 * opens with OPTS over the command line's open options (the trace line's
 * KEY, parsed and checked when the trace was read), or with the command
 * line's when NULL: a folded step ran with its own cache, sync mode and
 * checkpoint volume, and the ops after it run with them. */
static void reopen(worker *w, int poisoned, int type, const char *opts) {
    st_driver *d = w->d;
    if (type == OP_RESTART) {
        if (d->flt) flt_pause(d->flt, 1);
        int st = st_read_everything(w, "restart");
        st_note_error(w, st == ST_CORRUPTION ? ST_OK : st);
        if (d->flt) flt_pause(d->flt, 0);
    }
    if (d->flt) flt_op(d->flt, d->epoch << 32 | ++w->calls);
    st_release_snapshots(d);
    int st = d->E->close(d->db);
    d->db = NULL;
    if (st != ST_OK && d->flt) st_observe(d, VD_OBS_ERROR, w->id, d->epoch << 32 | w->calls, st, 0, 0);
    atomic_store(&d->recovering, 2);
    if (type == OP_RESTART) {
        st_options o = d->o;
        st_open_options eo;
        if (opts && st_apply_open_list(&o, opts)) o = d->o; /* checked when read: not reached */
        st_open_options_from(&o, d, &eo);
        eo.io_hooks = d->eo.io_hooks;
        d->eo = eo; /* the handle is held exclusively: no op reads it now */
    }
    st = st_open_db(w);
    if (st != ST_OK) {
        atomic_store(&d->recovering, 0);
        if (st == ST_CORRUPTION) {
            fprintf(stderr, "stress: the database no longer opens (corruption reported): ending the run\n");
            atomic_store(&d->unrecoverable, 1);
            d->reopen_failed = 1;
        } else {
            fprintf(stderr, "stress: reopen failed: %s\n", st_status_name(st));
            atomic_store(&d->infra, 1);
        }
        atomic_store(&d->stop, 1);
        return;
    }
    atomic_fetch_add(&d->handle_epoch, 1);
    atomic_fetch_add(&d->ops[type], 1);
    /* A synced commit lost that the verdict judges (3) leaves the
     * expected state above the engine's: what the run reads from here on
     * the same rules explain (V6b, V10), and a planned crash still comes. */
    st_post_open_check(w, poisoned, poisoned ? "after reopening a failed handle" : "after reopen");
    atomic_store(&d->recovering, 0);
}

/* From a worker holding the handle shared: reopen (as TYPE, a restart with
 * OPTS) unless another thread did since SEEN. */
static void reopen_from_worker(worker *w, uint64_t seen, int poisoned, int type, const char *opts) {
    st_driver *d = w->d;
    pthread_rwlock_unlock(&d->handle);
    pthread_rwlock_wrlock(&d->handle);
    if (atomic_load(&d->handle_epoch) == seen && d->db && !atomic_load(&d->stop)) reopen(w, poisoned, type, opts);
    pthread_rwlock_unlock(&d->handle);
    pthread_rwlock_rdlock(&d->handle);
}

/* ---- operations ---- */

typedef struct op_rec { /* what goes into the trace hash, per op */
    uint8_t type, status;
    uint16_t n;
    uint32_t vseed;
    uint64_t key;
} op_rec;

static void hash_op(worker *w, int type, int status, uint64_t key, uint32_t v, unsigned n) {
    st_driver *d = w->d;
    /* With several threads the interleaving is not reproducible, so the
     * op trace is not either: hash it only where it means something. */
    if (d->o.threads > 1) return;
    if (st_tracing(&d->trace) && w->tnote_len < sizeof w->tnote - 64) { /* the line's "what it did" */
        int k = 0;
        char *o = w->tnote + w->tnote_len;
        size_t room = sizeof w->tnote - w->tnote_len;
        if (type == OP_PUT || type == OP_DEL || type == OP_BATCH) {
            if (status == 0xff)
                k = snprintf(o, room, "skipped(pending) ");
            else if (v == ORC_DEL)
                k = snprintf(o, room, "%llu=del %s ", (unsigned long long)key, st_status_name(status));
            else
                k = snprintf(o, room, "%llu=v%08x %s ", (unsigned long long)key, v, st_status_name(status));
        } else if (type == OP_GET) {
            k = snprintf(o, room, "%llu %s ", (unsigned long long)key, st_status_name(status));
        } else if (type == OP_SCAN) {
            k = snprintf(o, room, "[%llu,+%u) seen=%u %s ", (unsigned long long)key, n, v, st_status_name(status));
        } else {
            k = snprintf(o, room, "%s ", st_status_name(status));
        }
        if (k > 0) w->tnote_len += (size_t)k < room ? (size_t)k : room - 1;
    }
    op_rec r = {(uint8_t)type, (uint8_t)status, (uint16_t)n, v, key};
    XXH3_64bits_update(w->hash, &r, sizeof r);
}

static int is_in_doubt_error(int st) { return st != ST_OK && st != ST_NOTFOUND; }
static int needs_reopen(int st) { return st == ST_IOERR || st == ST_NOSPACE || st == ST_POISONED || st == ST_OTHER; }

void st_note_error(worker *w, int st) {
    st_driver *d = w->d;
    if (is_in_doubt_error(st) && (d->flt || st != ST_CORRUPTION))
        st_observe(d, VD_OBS_ERROR, w->id, d->epoch << 32 | w->calls, st, 0, 0);
}

static void do_get(worker *w, uint64_t key) {
    st_driver *d = w->d;
    char ks[KEY_LEN + 1];
    key_format(key, ks);
    unsigned s = orc_stripe(d->exp, key);
    uint64_t v0 = atomic_load_explicit(&d->stripe_ver[s], memory_order_acquire);
    orc_entry a = orc_get(d->exp, key);
    int st = d->E->get(d->db, ks, KEY_LEN, &w->rbuf);
    orc_entry b = orc_get(d->exp, key);
    uint64_t v1 = atomic_load_explicit(&d->stripe_ver[s], memory_order_acquire);
    st_note_error(w, st);
    st_check_answer(w, key, st, w->rbuf.data, w->rbuf.len, a, b, v1 - v0 > 1, 0, "get");
    uint32_t vs = 0;
    if (st == ST_OK && w->rbuf.len >= 12) memcpy(&vs, (uint8_t *)w->rbuf.data + 8, 4);
    hash_op(w, OP_GET, st, key, vs, 1);
    atomic_fetch_add_explicit(&d->ops[OP_GET], 1, memory_order_relaxed);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A batch whose write failed is in doubt (its keys stay pending, S2);
 * once a reopen or the settlement resolved them, it must be wholly there
 * or wholly absent.  Called with the keys' stripes locked: cur is the old
 * value. */
/* The status of a doubt whose batch a crash cut (no call returned). */
#define CUT_BY_CRASH (-1)

/* Batch B (its old and new value seeds) in doubt with STATUS.  Caller
 * holds d->mu. */
static void add_doubt(st_driver *d, int status, const orc_inflight *b) {
    if (d->ndoubt == d->capdoubt) {
        size_t nc = d->capdoubt ? 2 * d->capdoubt : 16;
        void *p = realloc(d->doubt, nc * sizeof *d->doubt);
        if (p) d->doubt = p, d->capdoubt = nc;
    }
    if (d->ndoubt == d->capdoubt) return;
    struct doubt *bd = &d->doubt[d->ndoubt++];
    bd->n = (int)b->n;
    bd->thread = (int)b->thread;
    bd->status = status;
    bd->op = b->op;
    memset(bd->seen, 0, sizeof bd->seen);
    for (uint32_t i = 0; i < b->n; i++) bd->key[i] = b->key[i], bd->old_v[i] = b->old_v[i], bd->new_v[i] = b->new_v[i];
}

static void note_doubt(worker *w, int status, const orc_inflight *b) {
    pthread_mutex_lock(&w->d->mu);
    add_doubt(w->d, status, b);
    pthread_mutex_unlock(&w->d->mu);
}

void st_doubt_batches_cut_by_crash(st_driver *d) {
    orc_inflight cut[ORC_INFLIGHT_SLOTS];
    size_t n = orc_inflight_read(d->exp, cut, ORC_INFLIGHT_SLOTS);
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < n; i++) add_doubt(d, CUT_BY_CRASH, &cut[i]);
    pthread_mutex_unlock(&d->mu);
}

/* After every key was resolved (everything quiet): each batch in doubt
 * must have all its keys old or all new.  Batches with a key still
 * unresolved (unreadable) wait for the next check. */
void st_check_doubts(worker *w, int after_crash) {
    st_driver *d = w->d;
    pthread_mutex_lock(&d->mu);
    size_t keep = 0;
    for (size_t i = 0; i < d->ndoubt; i++) {
        struct doubt *bd = &d->doubt[i];
        int olds = 0, news = 0, open = 0;
        for (int k = 0; k < bd->n; k++) {
            if (!bd->seen[k]) {
                orc_entry e = orc_get(d->exp, bd->key[k]);
                if (e.pending) {
                    open = 1;
                    continue;
                }
                bd->seen[k] = bd->old_v[k] == bd->new_v[k] ? 3
                              : e.cur == bd->new_v[k]      ? 2
                              : e.cur == bd->old_v[k]      ? 1
                                                           : 3;
            }
            news += bd->seen[k] == 2;
            olds += bd->seen[k] == 1;
        }
        if (open) {
            d->doubt[keep++] = *bd;
            continue;
        }
        if (bd->status == CUT_BY_CRASH) atomic_fetch_add_explicit(&d->batches_cut, 1, memory_order_relaxed);
        if (olds && news) {
            pthread_mutex_unlock(&d->mu);
            orc_entry a = {bd->old_v[0], bd->new_v[0]};
            st_fail_key(w, VD_OBS_WRONG_VALUE, bd->key[0], a, a, 1, NULL, 0, "batch in doubt came back half applied",
                        after_crash);
            pthread_mutex_lock(&d->mu);
            st_recovery rec = {0};
            if (d->db) d->E->recovery(d->db, &rec);
            fprintf(stderr,
                    "    batch of %d keys written by thread %d, op %llu:%llu, %s%s: %d keys hold the new "
                    "value, %d the old one (last recovery: seq %llu, %llu records)\n",
                    bd->n, bd->thread, (unsigned long long)(bd->op >> 32), (unsigned long long)(bd->op & 0xffffffffu),
                    bd->status == CUT_BY_CRASH ? "cut by a crash" : "failed with ",
                    bd->status == CUT_BY_CRASH ? "" : st_status_name(bd->status), news, olds,
                    (unsigned long long)rec.recovered_seq, (unsigned long long)rec.records);
            for (int k = 0; k < bd->n; k++) {
                orc_entry e = orc_get(d->exp, bd->key[k]);
                fprintf(stderr, "      key %llu: old 0x%08x new 0x%08x resolved as %s, now 0x%08x\n",
                        (unsigned long long)bd->key[k], bd->old_v[k], bd->new_v[k],
                        bd->seen[k] == 1   ? "old"
                        : bd->seen[k] == 2 ? "new"
                                           : "neither",
                        e.cur);
            }
        }
    }
    d->ndoubt = keep;
    pthread_mutex_unlock(&d->mu);
}

_Static_assert(MAX_BATCH <= ORC_INFLIGHT_KEYS, "a batch fits an in-flight slot");

/* The batch of M keys this op writes with value seeds VS (ORC_DEL: a
 * delete): each key's value before it and after it.  Its doubt if the
 * call fails, and (E4 of oracle/expected.h) what its thread's in-flight
 * slot holds while the engine writes it, so that the process after a
 * crash that cut it checks it came back all or nothing. */
static orc_inflight batch_of(worker *w, const uint64_t *keys, const uint32_t *vs, size_t m) {
    st_driver *d = w->d;
    orc_inflight b = {.n = (uint32_t)m, .thread = (uint32_t)w->id, .op = d->epoch << 32 | w->calls};
    for (size_t i = 0; i < m; i++) {
        b.key[i] = keys[i];
        b.old_v[i] = orc_get(d->exp, keys[i]).cur;
        b.new_v[i] = vs[i] == ORC_DEL ? 0 : vs[i];
    }
    return b;
}

/* A write of N keys (1: put or delete; more: a batch, all or nothing).
 * Returns the status (the caller reopens when it says so). */
static int do_write(worker *w, int type, uint64_t *keys, size_t n) {
    st_driver *d = w->d;
    /* S1: lock the stripes of all keys, each once, in stripe order. */
    unsigned stripes[MAX_BATCH];
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) stripes[ns++] = orc_stripe(d->exp, keys[i]);
    for (size_t i = 1; i < ns; i++) /* insertion sort, unique */
        for (size_t j = i; j > 0 && stripes[j] < stripes[j - 1]; j--) {
            unsigned t = stripes[j];
            stripes[j] = stripes[j - 1];
            stripes[j - 1] = t;
        }
    size_t u = 0;
    for (size_t i = 0; i < ns; i++)
        if (!u || stripes[i] != stripes[u - 1]) stripes[u++] = stripes[i];
    ns = u;
    for (size_t i = 0; i < ns; i++) orc_lock_stripe(d->exp, stripes[i]);

    st_op ops[MAX_BATCH];
    char kbuf[MAX_BATCH][KEY_LEN + 1];
    uint32_t vs[MAX_BATCH];
    size_t m = 0;
    size_t maxv = d->values.large_one_in ? d->values.large_max : d->values.vmax;
    if (maxv < 12) maxv = 12;
    for (size_t i = 0; i < n; i++) {
        orc_entry e = orc_get(d->exp, keys[i]);
        if (e.pending) continue; /* S2: in doubt until a reopen resolves it */
        int del = type == OP_DEL || (type == OP_BATCH && below(w, 4) == 0);
        uint32_t v = del ? ORC_DEL : orc_next_value(d->exp, keys[i], rnd(w));
        key_format(keys[i], kbuf[m]);
        ops[m] = (st_op){.kind = del ? ST_DELETE : ST_PUT, .key = kbuf[m], .klen = KEY_LEN};
        if (!del) {
            uint8_t *val = w->vbuf + m * maxv;
            size_t len = vlen_of(&d->values, keys[i], v);
            orc_value(keys[i], v, val, len);
            ops[m].val = val;
            ops[m].vlen = len;
        }
        vs[m] = v;
        keys[m] = keys[i];
        m++;
    }
    int st = ST_OK, aborted = 0;
    uint64_t seq = 0;
    if (m) {
        for (size_t i = 0; i < m; i++) orc_mark_pending(d->exp, keys[i], vs[i]);
        orc_inflight batch = batch_of(w, keys, vs, m);
        if (m > 1) orc_inflight_begin(d->exp, (unsigned)w->id, &batch);
        st = d->E->write(d->db, ops, m, &seq);
        if (m > 1) orc_inflight_end(d->exp, (unsigned)w->id);
        /* ST_POISONED: refused at the door (an earlier failure), nothing
         * of it reached the engine; otherwise the engine says. */
        if (st != ST_OK && st != ST_NOTFOUND && (st == ST_POISONED || (d->E->in_doubt && !d->E->in_doubt(d->db)))) {
            /* Aborted by the engine: none of it is, or will ever be,
             * visible; the keys keep their values (checked by later
             * reads, after crashes too). */
            for (size_t i = 0; i < m; i++) orc_resolve(d->exp, keys[i], orc_get(d->exp, keys[i]).cur);
            aborted = 1;
            atomic_fetch_add_explicit(&d->ops[OP_ABORTED], 1, memory_order_relaxed);
        } else if (st != ST_OK && m > 1) {
            note_doubt(w, st, &batch);
        }
        if (st == ST_OK) {
            for (size_t i = 0; i < m; i++) {
                unsigned s = orc_stripe(d->exp, keys[i]);
                orc_settle(d->exp, keys[i], seq);
                atomic_store_explicit(&d->stripe_seq[s], seq, memory_order_relaxed);
                atomic_fetch_add_explicit(&d->stripe_ver[s], 1, memory_order_release);
            }
        }
    }
    for (size_t i = ns; i-- > 0;) orc_unlock_stripe(d->exp, stripes[i]);
    if (st == ST_OK && m) {
        if (d->eo.sync_mode != 2)           /* the open's: a restart may set another (trace.c) */
            st_settle_durable(d->exp, seq); /* commit, group: durable on return */
        else if (++w->wrote % 64 == 0)
            st_settle_durable(d->exp, d->E->durable_seq(d->db));
    }
    st_note_error(w, st);
    for (size_t i = 0; i < m; i++) hash_op(w, type, st, keys[i], vs[i], (unsigned)m);
    if (!m) hash_op(w, type, 0xff, keys[0], 0, 0);
    atomic_fetch_add_explicit(&d->ops[type], 1, memory_order_relaxed);
    /* The error was judged (note_error); the handle goes on. */
    return aborted ? ST_OK : st;
}

/* ---- snapshots ----
 * Taking one: lock the stripes of SNAP_KEYS consecutive keys (no write of
 * them can be between its pending mark and its settle), take the
 * snapshot, record their values.  Some ops later the worker re-reads them
 * through it, point reads and a scan, and each must be exactly what was
 * recorded, whatever was written, vacuumed or checkpointed meanwhile. */
static void snap_take(worker *w) {
    st_driver *d = w->d;
    uint64_t n = SNAP_KEYS < w->phase.max_key ? SNAP_KEYS : w->phase.max_key;
    uint64_t k0 = below(w, w->phase.max_key - n + 1);
    unsigned stripes[SNAP_KEYS];
    size_t ns = 0;
    for (uint64_t i = 0; i < n; i++) {
        unsigned st = orc_stripe(d->exp, k0 + i);
        size_t j = ns;
        while (j > 0 && stripes[j - 1] > st) j--;
        if (j > 0 && stripes[j - 1] == st) continue;
        memmove(stripes + j + 1, stripes + j, (ns - j) * sizeof *stripes);
        stripes[j] = st;
        ns++;
    }
    for (size_t i = 0; i < ns; i++) orc_lock_stripe(d->exp, stripes[i]);
    uint64_t seq = 0;
    int st = d->E->snapshot(d->db, &w->snap, &seq);
    if (st == ST_OK) {
        for (uint64_t i = 0; i < n; i++) {
            orc_entry e = orc_get(d->exp, k0 + i);
            w->snap_known[i] = !e.pending;
            w->snap_v[i] = e.cur == ORC_DEL ? 0 : e.cur;
        }
        w->snap_seq = seq;
        w->snap_key = k0;
        w->snap_n = (int)n;
        w->snap_until = w->calls + 1 + below(w, 2 * d->o.snapshot_hold_ops);
    } else {
        w->snap = NULL;
    }
    for (size_t i = ns; i-- > 0;) orc_unlock_stripe(d->exp, stripes[i]);
    st_note_error(w, st);
    hash_op(w, OP_SNAPSHOT, st, k0, 0, 0);
}

static void snap_check(worker *w) {
    st_driver *d = w->d;
    char ks[KEY_LEN + 1];
    char what[96];
    snprintf(what, sizeof what, "read at a snapshot (seq %llu)", (unsigned long long)w->snap_seq);
    for (int i = 0; i < w->snap_n; i++) {
        uint64_t key = w->snap_key + (uint64_t)i;
        key_format(key, ks);
        int st = d->E->get_at(d->db, w->snap, ks, KEY_LEN, &w->rbuf);
        st_note_error(w, st);
        if (!w->snap_known[i]) continue;
        orc_entry e = {w->snap_v[i], 0};
        st_check_answer(w, key, st, w->rbuf.data, w->rbuf.len, e, e, 0, 0, what);
    }
    /* The same keys through an iterator on the snapshot. */
    char lo[KEY_LEN + 1], hi[KEY_LEN + 1];
    key_format(w->snap_key, lo);
    key_format(w->snap_key + (uint64_t)w->snap_n, hi);
    st_iter *it = NULL;
    int seen[SNAP_KEYS] = {0};
    int st = d->E->iter_open_at(d->db, w->snap, lo, KEY_LEN, hi, KEY_LEN, &it);
    if (st == ST_OK) st = d->E->iter_first(it);
    snprintf(what, sizeof what, "scan at a snapshot (seq %llu)", (unsigned long long)w->snap_seq);
    while (st == ST_OK) {
        size_t kl, vl;
        const void *k = d->E->iter_key(it, &kl);
        const void *v = d->E->iter_value(it, &vl);
        uint64_t key;
        if (key_parse(k, kl, &key) || key < w->snap_key || key >= w->snap_key + (uint64_t)w->snap_n) break;
        int i = (int)(key - w->snap_key);
        seen[i] = 1;
        if (w->snap_known[i]) {
            orc_entry e = {w->snap_v[i], 0};
            st_check_answer(w, key, ST_OK, v, vl, e, e, 0, 0, what);
        }
        st = d->E->iter_next(it);
    }
    if (it) d->E->iter_close(it);
    st_note_error(w, st == ST_NOTFOUND ? ST_OK : st);
    if (st == ST_NOTFOUND) /* a complete scan: keys it skipped are absent */
        for (int i = 0; i < w->snap_n; i++)
            if (!seen[i] && w->snap_known[i]) {
                orc_entry e = {w->snap_v[i], 0};
                st_check_answer(w, w->snap_key + (uint64_t)i, ST_NOTFOUND, NULL, 0, e, e, 0, 0, what);
            }
    d->E->snapshot_release(d->db, w->snap);
    w->snap = NULL;
    hash_op(w, OP_SNAPSHOT, 0, w->snap_key, 1, 0);
    atomic_fetch_add_explicit(&d->ops[OP_SNAPSHOT], 1, memory_order_relaxed);
}

/* Reopen and close: every worker is stopped; their snapshots go first. */
void st_release_snapshots(st_driver *d) {
    for (uint64_t i = 0; d->w && i < d->o.threads; i++)
        if (d->w[i].snap) {
            if (d->db) d->E->snapshot_release(d->db, d->w[i].snap);
            d->w[i].snap = NULL;
        }
}

/* The value seed a scan returned for a key (0: absent, or not a value
 * of the driver's: the per-key check judged it). */
static uint32_t seen_seed(int st, const uint8_t *val, size_t len) {
    uint64_t k;
    uint32_t v = 0;
    if (st != ST_OK || orc_value_whose(val, len, &k, &v) != 0) return 0;
    return v;
}

/* How a scan walks its range: forward (first, next), backward (last,
 * prev), or forward with steps back: at a drawn key a prev, which must
 * return the key passed just before with the value it had, then a next,
 * which must return the key again.  An iterator's view is one point of
 * history (adapter.h), so a change of direction retraces what it saw;
 * a merging iterator that turns around wrongly (keeps its children
 * positioned for the old direction) returns another key or skips one. */
enum { SCAN_FORWARD, SCAN_BACKWARD, SCAN_TURNING };

/* What a walk over [start, start + n) collected: each key's status and a
 * copy of its value (values are valid only until the iterator's next
 * move), and what broke the walk, if anything. */
typedef struct scan_walk {
    uint64_t start, n;
    int sts[MAX_SCAN];
    size_t lens[MAX_SCAN], offs[MAX_SCAN];
    uint8_t *copies;
    size_t copy_len, copy_cap;
    unsigned seen;
    uint64_t last, before; /* the keys seen last and just before it */
    int broken;            /* 1 out of bounds, 2 out of order, 3 a turn that did not retrace */
    uint64_t bad;          /* the key that broke it (UINT64_MAX: none returned) */
    char how[96];
} scan_walk;

/* The iterator's entry: its key into *KEY; 0, or 1 when it is not a key
 * of the walk's range (noted in SW). */
static int walk_key(const st_driver *d, st_iter *it, scan_walk *sw, uint64_t *key) {
    size_t kl;
    const void *k = d->E->iter_key(it, &kl);
    if (key_parse(k, kl, key) || *key < sw->start || *key >= sw->start + sw->n) {
        sw->broken = 1;
        return 1;
    }
    return 0;
}

/* Take the iterator's entry into SW (keys must rise, or fall when DOWN);
 * 0 to go on, 1 when the walk broke. */
static int walk_take(const st_driver *d, st_iter *it, scan_walk *sw, int down) {
    uint64_t key;
    if (walk_key(d, it, sw, &key)) return 1;
    if (sw->seen && (down ? key >= sw->last : key <= sw->last)) {
        sw->broken = 2, sw->bad = key; /* a key twice, or out of order: each copy would pass the value check */
        return 1;
    }
    size_t vl;
    const void *v = d->E->iter_value(it, &vl);
    if (sw->copy_len + vl > sw->copy_cap) {
        size_t nc = (sw->copy_len + vl) * 2 + 256;
        uint8_t *p = realloc(sw->copies, nc);
        if (!p) return 1;
        sw->copies = p, sw->copy_cap = nc;
    }
    memcpy(sw->copies + sw->copy_len, v, vl);
    sw->offs[key - sw->start] = sw->copy_len;
    sw->copy_len += vl;
    sw->sts[key - sw->start] = ST_OK;
    sw->lens[key - sw->start] = vl;
    sw->before = sw->last, sw->last = key;
    sw->seen++;
    return 0;
}

/* After a move that returned ST: the iterator must stand on WANT with
 * the value the walk copied for it.  ST: the move's status (an error
 * ends the walk as the scan's status); a wrong key or value breaks it. */
static int walk_is_at(const st_driver *d, st_iter *it, scan_walk *sw, int st, uint64_t want, const char *move) {
    if (st != ST_OK && st != ST_NOTFOUND) return st;
    uint64_t key = UINT64_MAX;
    if (st == ST_OK && walk_key(d, it, sw, &key)) return ST_OK;
    size_t vl = 0;
    const void *v = st == ST_OK ? d->E->iter_value(it, &vl) : NULL;
    size_t i = (size_t)(want - sw->start);
    if (key == want && vl == sw->lens[i] && !memcmp(v, sw->copies + sw->offs[i], vl)) return ST_OK;
    sw->broken = 3, sw->bad = key == UINT64_MAX ? sw->last : key;
    snprintf(sw->how, sizeof sw->how, "%s%s, where key %llu%s was due", key == UINT64_MAX ? "and then nothing " : "",
             move, (unsigned long long)want, key == want ? " with the value it had" : "");
    return ST_OK;
}

/* A step back and forward again at the walk's last key (SCAN_TURNING). */
static int walk_turn(const st_driver *d, st_iter *it, scan_walk *sw) {
    uint64_t here = sw->last;
    int st = walk_is_at(d, it, sw, d->E->iter_prev(it), sw->before, "on a step back (prev after next)");
    if (st != ST_OK || sw->broken) return st;
    return walk_is_at(d, it, sw, d->E->iter_next(it), here, "on the step forward again");
}

/* Walk IT over SW's range in direction DIR (drawing the turns from W's
 * stream); the walk's final status (ST_NOTFOUND: it reached the end). */
static int scan_walk_run(worker *w, st_iter *it, scan_walk *sw, int dir) {
    st_driver *d = w->d;
    int down = dir == SCAN_BACKWARD;
    int st = down ? d->E->iter_last(it) : d->E->iter_first(it);
    while (st == ST_OK) {
        if (walk_take(d, it, sw, down)) break;
        if (dir == SCAN_TURNING && sw->seen >= 2 && one_in(w, 4)) {
            st = walk_turn(d, it, sw);
            if (st != ST_OK || sw->broken) break;
        }
        st = down ? d->E->iter_prev(it) : d->E->iter_next(it);
    }
    return st;
}

/* A walk's direction: forward, or (where the adapter can walk back) one
 * of the three. */
static int scan_direction(worker *w) {
    if (!w->d->E->iter_prev) return SCAN_FORWARD;
    uint64_t r = below(w, 4);
    return r < 2 ? SCAN_FORWARD : r == 2 ? SCAN_BACKWARD : SCAN_TURNING;
}

/* A walk that broke: the symptom it is. */
static void scan_walk_broken(worker *w, const scan_walk *sw, const char *lo, const char *hi) {
    st_driver *d = w->d;
    if (sw->broken == 2) {
        st_scan_disorder(w, sw->bad, sw->last, "again or out of order", "scan", 0);
    } else if (sw->broken == 3) {
        st_scan_disorder(w, sw->bad, sw->last, sw->how, "scan", 0);
    } else {
        /* A fault the engine promises nothing for may do it: the verdict
         * decides (V10). */
        int unpromised = st_promise_none_possible(d);
        fprintf(stderr, "stress: %s wrong_value: scan [%s, %s) returned a key outside its bounds\n    repro: %s\n",
                unpromised ? "SUSPECT (a fault the engine promises nothing for? the verdict below decides)" : "FAILURE",
                lo, hi, d->repro);
        st_observe(d, VD_OBS_WRONG_VALUE, w->id, d->epoch << 32 | w->calls, 0, sw->start, 0);
        if (!unpromised) atomic_fetch_add(&d->failures, 1);
    }
}

static void do_scan(worker *w, uint64_t start) {
    st_driver *d = w->d;
    uint64_t n = 1 + below(w, MAX_SCAN);
    if (start + n > d->o.max_key) n = d->o.max_key - start;
    int dir = scan_direction(w);
    orc_entry a[MAX_SCAN], b[MAX_SCAN];
    uint64_t v0[MAX_SCAN], v1[MAX_SCAN];
    for (uint64_t i = 0; i < n; i++) {
        v0[i] = atomic_load_explicit(&d->stripe_ver[orc_stripe(d->exp, start + i)], memory_order_acquire);
        a[i] = orc_get(d->exp, start + i);
    }
    char lo[KEY_LEN + 1], hi[KEY_LEN + 1];
    key_format(start, lo);
    key_format(start + n, hi);
    scan_walk sw = {.start = start, .n = n};
    for (uint64_t i = 0; i < n; i++) sw.sts[i] = ST_NOTFOUND, sw.lens[i] = 0;
    st_iter *it = NULL;
    int st = d->E->iter_open(d->db, lo, KEY_LEN, hi, KEY_LEN, &it);
    if (st == ST_OK) st = scan_walk_run(w, it, &sw, dir);
    if (it) d->E->iter_close(it);
    uint64_t seqs[MAX_SCAN];
    for (uint64_t i = 0; i < n; i++) {
        /* Under the stripe's lock: no write between its settle and its
         * count, so a stripe one write changed names that write's seq. */
        unsigned s = orc_stripe(d->exp, start + i);
        orc_lock_stripe(d->exp, s);
        b[i] = orc_get(d->exp, start + i);
        v1[i] = atomic_load_explicit(&d->stripe_ver[s], memory_order_acquire);
        seqs[i] = atomic_load_explicit(&d->stripe_seq[s], memory_order_relaxed);
        orc_unlock_stripe(d->exp, s);
    }
    int final = st == ST_NOTFOUND ? ST_OK : st;
    st_note_error(w, final);
    if (sw.broken) {
        scan_walk_broken(w, &sw, lo, hi);
    } else if (final == ST_OK) {
        st_scan_key hk[MAX_SCAN];
        size_t good = 0;
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *val = sw.sts[i] == ST_OK ? sw.copies + sw.offs[i] : NULL;
            good += st_check_answer(w, start + i, sw.sts[i], val, sw.lens[i], a[i], b[i], v1[i] - v0[i] > 1, 0, "scan");
            hk[i] = (st_scan_key){start + i, seen_seed(sw.sts[i], val, sw.lens[i]), a[i], b[i], v1[i] - v0[i], seqs[i]};
        }
        if (good == n) st_check_scan_history(w, hk, n); /* a wrong value was judged already */
    } else {
        atomic_fetch_add_explicit(&d->unverifiable, n, memory_order_relaxed);
    }
    free(sw.copies);
    hash_op(w, OP_SCAN, final, start, sw.seen, (unsigned)n);
    atomic_fetch_add_explicit(&d->ops[OP_SCAN], 1, memory_order_relaxed);
}

/* A checkpoint or vacuum that ran with status ST: judge, count, reopen if
 * it left the handle failed. */
static void maintenance(worker *w, uint64_t seen, int type, int st) {
    st_driver *d = w->d;
    st_note_error(w, st);
    hash_op(w, type, st, 0, 0, 0);
    atomic_fetch_add_explicit(&d->ops[type], 1, memory_order_relaxed);
    if (needs_reopen(st)) reopen_from_worker(w, seen, 1, OP_REOPEN, NULL);
}

/* ---- phases (--phase_ops) ----
 * Phase N's mix is drawn from the options' and N alone (the same for
 * every thread, and for a replayed op of that index): each op kind with a
 * share stays on at odds 1/2 (one at least), shares rescaled to 100;
 * checkpoints, snapshots and vacuums that are on are off, as set or ten
 * times as frequent, a third each; keys from the whole space or, at odds
 * 1/2, from its first eighth, the same eighth in every phase so that the
 * pages one phase worked on are the next hot phase's. */
static uint64_t phase_rate(uint64_t *r, uint64_t one_in_) {
    *r = rng_mix64(*r);
    uint64_t t = *r % 3;
    if (!one_in_ || t == 1) return one_in_;
    return t == 0 ? 0 : one_in_ / 10 > 1 ? one_in_ / 10 : 2;
}

static void phase_draw(const st_options *o, uint64_t index, st_phase *ph) {
    uint64_t r = rng_mix64(o->seed ^ rng_mix64(index + 1) ^ 0x7068617365000000ull);
    uint64_t share[5] = {o->readpercent, o->writepercent, o->delpercent, o->iterpercent};
    share[4] = 100 - share[0] - share[1] - share[2] - share[3];
    uint64_t kept = 0, on = 0;
    for (int k = 0; k < 5; k++) {
        r = rng_mix64(r);
        if (share[k] && (r & 1)) kept |= 1u << k;
        if (share[k]) on |= 1u << k;
    }
    if (!kept) /* one kind at least: the first on from a drawn start */
        for (unsigned k = 0, s = (unsigned)((r >> 8) % 5); !kept && k < 5; k++)
            if (on >> (s + k) % 5 & 1) kept = 1u << (s + k) % 5;
    uint64_t sum = 0;
    for (int k = 0; k < 5; k++) share[k] = kept >> k & 1 ? share[k] : 0, sum += share[k];
    uint64_t *pct[4] = {&ph->read, &ph->write, &ph->del, &ph->iter}, left = 100;
    for (int k = 0; k < 4; k++) left -= *pct[k] = sum ? share[k] * 100 / sum : 0;
    if (!share[4]) /* no batches: the rounding's rest to the last kind on */
        for (int k = 3; k >= 0; k--)
            if (share[k]) {
                *pct[k] += left;
                break;
            }
    ph->checkpoint_one_in = phase_rate(&r, o->checkpoint_one_in);
    ph->snapshot_one_in = phase_rate(&r, o->acquire_snapshot_one_in);
    ph->vacuum_one_in = phase_rate(&r, o->vacuum_one_in);
    r = rng_mix64(r);
    ph->max_key = (r & 1) && o->max_key >= 8 ? o->max_key / 8 : o->max_key;
}

/* Make W's phase the one of op INDEX (the options' mix without phases). */
static void phase_at(worker *w, uint64_t index) {
    const st_options *o = &w->d->o;
    uint64_t n = o->phase_ops ? index / o->phase_ops : 0;
    if (w->phase.index == n && w->phase.max_key) return;
    w->phase = (st_phase){.index = n,
                          .read = o->readpercent,
                          .write = o->writepercent,
                          .del = o->delpercent,
                          .iter = o->iterpercent,
                          .checkpoint_one_in = o->checkpoint_one_in,
                          .snapshot_one_in = o->acquire_snapshot_one_in,
                          .vacuum_one_in = o->vacuum_one_in,
                          .max_key = o->max_key};
    if (o->phase_ops) phase_draw(o, n, &w->phase);
}

/* The op a worker draws next: its type and key (a batch draws its keys
 * when it runs).  The draws are those of the run's stream, in the mix of
 * the worker's phase. */
static int choose_op(worker *w, uint64_t i, uint64_t *key) {
    st_driver *d = w->d;
    /* Reopens spread over the run (thread 0): by op count, or by time
     * when the run has only a --duration. */
    if (w->id == 0 && d->o.reopen) {
        int due = 0;
        if (d->o.ops_per_thread) {
            uint64_t every = d->o.ops_per_thread / (d->o.reopen + 1);
            due = every && i && i % every == 0 && i / every <= d->o.reopen;
        } else if ((i & 63) == 0 && d->reopens_done < d->o.reopen) {
            due = st_now() - d->t0 >= (double)d->o.duration * (double)(d->reopens_done + 1) / (double)(d->o.reopen + 1);
        }
        if (due) {
            d->reopens_done++;
            return OP_REOPEN;
        }
    }
    const st_phase *ph = &w->phase;
    if (one_in(w, ph->checkpoint_one_in)) return OP_CHECKPOINT;
    if (d->E->snapshot) {
        if (w->snap && w->calls >= w->snap_until) return OP_SNAPSHOT;
        if (!w->snap && one_in(w, ph->snapshot_one_in)) return OP_SNAPSHOT;
    }
    if (d->E->vacuum && one_in(w, ph->vacuum_one_in)) return OP_VACUUM;
    if (one_in(w, d->o.verify_db_one_in)) return OP_VERIFY;
    uint64_t p = below(w, 100);
    *key = below(w, ph->max_key);
    uint64_t r = ph->read, wr = r + ph->write, dl = wr + ph->del, it = dl + ph->iter;
    return p < r ? OP_GET : p < wr ? OP_PUT : p < dl ? OP_DEL : p < it ? OP_SCAN : OP_BATCH;
}

/* Run op TYPE (on KEY where it has one; a restart opens with OPTS). */
static void run_op(worker *w, uint64_t seen, uint64_t i, int type, uint64_t key, const char *opts) {
    st_driver *d = w->d;
    int st = ST_OK;
    switch (type) {
    case OP_REOPEN:
    case OP_RESTART:
        reopen_from_worker(w, seen, 0, type, opts);
        hash_op(w, type, 0, i, 0, 0);
        return;
    case OP_CHECKPOINT: maintenance(w, seen, OP_CHECKPOINT, d->E->checkpoint(d->db)); return;
    case OP_VACUUM:
        if (d->E->vacuum) maintenance(w, seen, OP_VACUUM, d->E->vacuum(d->db));
        return;
    case OP_SNAPSHOT:
        if (!d->E->snapshot) return;
        if (w->snap)
            snap_check(w);
        else
            snap_take(w);
        return;
    case OP_VERIFY: {
        uint64_t problems = 0;
        st = d->E->verify(d->db, &problems);
        /* Corruption is the verify's finding, judged by its reports
         * (V1); as a status it is also the call failing, so an injected
         * error an engine reports as corruption (SQLite's EIO on a read)
         * was not swallowed (V3). */
        st_note_error(w, st);
        hash_op(w, OP_VERIFY, st, problems, 0, 0);
        atomic_fetch_add_explicit(&d->ops[OP_VERIFY], 1, memory_order_relaxed);
        return;
    }
    case OP_GET: do_get(w, key); return;
    case OP_PUT: st = do_write(w, OP_PUT, &key, 1); break;
    case OP_DEL: st = do_write(w, OP_DEL, &key, 1); break;
    case OP_SCAN: do_scan(w, key); return;
    default: {
        uint64_t keys[MAX_BATCH];
        size_t n = 2 + below(w, MAX_BATCH - 1), m = 0;
        if (n > w->phase.max_key) n = w->phase.max_key;
        while (m < n) { /* distinct keys */
            uint64_t k = below(w, w->phase.max_key);
            int dup = 0;
            for (size_t j = 0; j < m; j++) dup |= keys[j] == k;
            if (!dup) keys[m++] = k;
        }
        qsort(keys, m, sizeof *keys, cmp_u64);
        st = do_write(w, OP_BATCH, keys, m);
    }
    }
    if (needs_reopen(st)) reopen_from_worker(w, seen, 1, OP_REOPEN, NULL);
}

/* One workload op, under the handle lock (S3).  With one thread (traced,
 * replayed or neither: trace.c), the op draws from a seed of its own: the
 * workload's stream and the fault library's are reseeded from it, and
 * from it again (mixed) once the op is chosen, so what it does hangs on
 * its seed, not on the ops before it.  Every one-thread run draws this
 * way, not only a traced one, so that the trace of a one-thread run is
 * that run: a shrinker traces the failing run itself, not another run of
 * its shape that may not fail.  Several threads keep one stream each (a
 * run of several threads is not deterministic anyway). */
static void one_op(worker *w, uint64_t i) {
    st_driver *d = w->d;
    uint64_t seen = atomic_load(&d->handle_epoch);
    w->calls++;
    const st_trace_op *rop = st_replaying(&d->trace) ? st_replay_at(&d->trace, i) : NULL;
    st_trace_op top = {.index = i};
    int per_op = rop || st_tracing(&d->trace) || d->o.threads == 1;
    if (per_op) {
        top = rop ? *rop : (st_trace_op){.index = i, .seed = st_trace_seed(d->o.seed, i)};
        w->rng = top.seed;
        if (d->flt) flt_thread_reseed(d->flt, top.seed);
        if (d->flt && top.faults_off) flt_pause(d->flt, 1);
        w->tnote_len = 0;
        w->tnote[0] = 0;
    }
    uint64_t inj0 = st_tracing(&d->trace) ? st_injections_so_far(d->flt) : 0, call = w->calls;
    if (d->flt) {
        flt_op(d->flt, d->epoch << 32 | w->calls);
        flt_tick(d->flt, d->E->native(d->db));
        if (rop && rop->pinned == PIN_PAGE) flt_flip_page_at(d->flt, rop->pin_block, rop->pin_bit);
        if (rop && rop->pinned == PIN_CACHE)
            flt_flip_cache_at(d->flt, d->E->native(d->db), rop->pin_block, rop->pin_bit);
        if (rop && rop->kill_point) flt_kill_at(d->flt, rop->kill_point, rop->kill_nth); /* valid: parsed */
    }
    uint64_t key = 0;
    phase_at(w, rop ? rop->index : i);
    int type = rop ? rop->type : choose_op(w, i, &key);
    if (rop) key = rop->key;
    if (per_op) {
        top.type = type;
        top.has_key = type == OP_GET || type == OP_PUT || type == OP_DEL || type == OP_SCAN;
        top.key = top.has_key ? key : 0;
        w->rng = rng_mix64(top.seed ^ 0x72756e6f70000000ull);
        if (st_tracing(&d->trace)) st_trace_head(&d->trace, &top);
    }
    /* Checkpoints the op's write started (the log's volume, the engine's
     * checkpoint_wal_bytes) go in its note, ckpt=N: a shrinker makes them
     * ops of their own, which removing other ops does not move.  The count
     * before an op is the one after the op before it on the same handle
     * (a traced run has one thread and the engine no thread of its own):
     * one stats call an op, not two (each stats call makes a syscall). */
    st_stats ss = {0};
    if (st_tracing(&d->trace) && type != OP_CHECKPOINT && d->db && w->ck_epoch != seen) d->E->stats(d->db, &ss);
    uint64_t ck0 = w->ck_epoch == seen ? w->ck_after : ss.checkpoints;
    run_op(w, seen, i, type, key, rop ? rop->open_opts : NULL);
    if (d->flt && per_op && top.faults_off) flt_pause(d->flt, 0);
    if (st_tracing(&d->trace)) { /* the ledger's op field of what it injected: epoch << 32 | call */
        size_t l = w->tnote_len < sizeof w->tnote ? w->tnote_len : 0;
        w->ck_epoch = UINT64_MAX;
        if (type != OP_CHECKPOINT && d->db && atomic_load(&d->handle_epoch) == seen) {
            d->E->stats(d->db, &ss);
            w->ck_after = ss.checkpoints;
            w->ck_epoch = seen;
            if (ss.checkpoints > ck0 && l < sizeof w->tnote - 32) {
                int k = snprintf(w->tnote + l, sizeof w->tnote - l, "ckpt=%llu ",
                                 (unsigned long long)(ss.checkpoints - ck0));
                if (k > 0) l += (size_t)k;
            }
        }
        snprintf(w->tnote + l, sizeof w->tnote - l, "op=%llu:%llu", (unsigned long long)d->epoch,
                 (unsigned long long)call);
        st_trace_note(&d->trace, w->tnote, st_injections_so_far(d->flt) - inj0);
    }
}

void *st_worker_main(void *arg) {
    worker *w = arg;
    st_driver *d = w->d;
    if (d->flt) flt_thread_start(d->flt, w->id);
    double end = d->o.duration ? d->t0 + (double)d->o.duration : 0;
    pthread_rwlock_rdlock(&d->handle);
    int replay = st_replaying(&d->trace);
    if (replay) end = 0; /* the trace says how many ops */
    for (uint64_t i = 0; replay ? i < st_replay_count(&d->trace) : !d->o.ops_per_thread || i < d->o.ops_per_thread;
         i++) {
        if (atomic_load_explicit(&d->stop, memory_order_relaxed)) break;
        if (end && (i & 63) == 0 && st_now() >= end) break;
        if ((i & 15) == 15) { /* let a waiting reopen in */
            pthread_rwlock_unlock(&d->handle);
            pthread_rwlock_rdlock(&d->handle);
        }
        if (!d->db) break;
        one_op(w, i);
        atomic_store_explicit(&w->done, i + 1, memory_order_relaxed);
    }
    pthread_rwlock_unlock(&d->handle);
    return NULL;
}
