/*
 * journal_read.c -- the reader of RUN_DIR/journal (journal_int.h): record
 * decoding and the analysis of what was durable, and the undo of one
 * write.  build/powerloss uses it after a crash; the writer (journal.c)
 * uses it in process to drop the unsynced writes of a file whose fsync
 * failed, so that both apply one rule.  It writes no journal record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "journal_int.h"

/* ---- the u64 map (journal_int.h) ----------------------------------------- */

static size_t um_slot(uint64_t k, size_t cap) {
    uint64_t h = k * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static int um_grow(jr_u64map *m) {
    size_t ncap = m->cap ? 2 * m->cap : 256;
    uint64_t *nk = calloc(ncap, sizeof *nk);
    uint64_t *nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->key[i]) continue;
        size_t s = um_slot(m->key[i], ncap);
        while (nk[s]) s = (s + 1) & (ncap - 1);
        nk[s] = m->key[i];
        nv[s] = m->val[i];
    }
    free(m->key);
    free(m->val);
    m->key = nk;
    m->val = nv;
    m->cap = ncap;
    return 0;
}

/* Insert or replace K (nonzero). */
int flt_jr_um_put(jr_u64map *m, uint64_t k, uint64_t v) {
    if ((m->n + 1) * 2 > m->cap) {
        int rc = um_grow(m);
        if (rc) return rc;
    }
    size_t s = um_slot(k, m->cap);
    while (m->key[s] && m->key[s] != k) s = (s + 1) & (m->cap - 1);
    if (!m->key[s]) m->n++;
    m->key[s] = k;
    m->val[s] = v;
    return 0;
}

/* Returns 1 and K's value in *V if K is there. */
int flt_jr_um_get(const jr_u64map *m, uint64_t k, uint64_t *v) {
    if (!m->cap) return 0;
    size_t s = um_slot(k, m->cap);
    while (m->key[s] && m->key[s] != k) s = (s + 1) & (m->cap - 1);
    if (!m->key[s]) return 0;
    *v = m->val[s];
    return 1;
}

/* Remove K; returns 1 and its value in *V if it was there. */
int flt_jr_um_take(jr_u64map *m, uint64_t k, uint64_t *v) {
    if (!m->cap) return 0;
    size_t s = um_slot(k, m->cap);
    while (m->key[s] && m->key[s] != k) s = (s + 1) & (m->cap - 1);
    if (!m->key[s]) return 0;
    *v = m->val[s];
    /* Backward shift: keep every later entry of the run reachable. */
    size_t hole = s, i = s;
    for (;;) {
        i = (i + 1) & (m->cap - 1);
        if (!m->key[i]) break;
        size_t home = um_slot(m->key[i], m->cap);
        /* Move it if its home is not in (hole, i] cyclically. */
        int stay = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (stay) continue;
        m->key[hole] = m->key[i];
        m->val[hole] = m->val[i];
        hole = i;
    }
    m->key[hole] = 0;
    m->n--;
    return 1;
}

/* Empty the map, keeping its storage. */
void flt_jr_um_clear(jr_u64map *m) {
    if (m->cap) memset(m->key, 0, m->cap * sizeof *m->key);
    m->n = 0;
}

void flt_jr_um_free(jr_u64map *m) {
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---- little-endian decoding ------------------------------------------------ */

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

/* The record checksum: the payload hashed with the hash of the header's
 * first 24 bytes as seed (no streaming state needed). */
uint64_t flt_jr_sum(const uint8_t *hdr, const uint8_t *payload, size_t len) {
    return XXH3_64bits_withSeed(payload, len, XXH3_64bits(hdr, JR_SUM_OFF));
}

/* ---- decoding (for powerloss.c and the drop) -------------------------------- */

/* Take a str field at *P within END; 0 if it does not fit. */
static int take_str(const uint8_t **p, const uint8_t *end, jr_str *s) {
    if (end - *p < 2) return 0;
    s->len = get16(*p);
    if ((size_t)(end - *p - 2) < s->len) return 0;
    s->p = (const char *)*p + 2;
    *p += 2 + s->len;
    return 1;
}

static int take_u64(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    if (end - *p < 8) return 0;
    *v = get64(*p);
    *p += 8;
    return 1;
}

size_t flt_jr_decode(const uint8_t *buf, size_t avail, jr_rec *r) {
    if (avail < JR_HDR || get32(buf) != JR_MAGIC || buf[5] != JR_VERSION) return 0;
    uint32_t len = get32(buf + 8);
    if (len > avail - JR_HDR) return 0;
    if (flt_jr_sum(buf, buf + JR_HDR, len) != get64(buf + JR_SUM_OFF)) return 0;

    memset(r, 0, sizeof *r);
    r->kind = buf[4];
    r->id = get64(buf + 16);
    const uint8_t *p = buf + JR_HDR, *end = p + len;
    int ok = 1;
    switch (r->kind) {
    case JR_SESSION:
        ok = take_u64(&p, end, &r->session) && take_u64(&p, end, &r->pid) && take_u64(&p, end, &r->time_ns) &&
             take_str(&p, end, &r->path);
        break;
    case JR_WRITE_B:
        ok = take_u64(&p, end, &r->offset) && take_u64(&p, end, &r->len) && take_u64(&p, end, &r->old_size) &&
             take_str(&p, end, &r->path);
        if (ok) {
            r->old = p;
            r->old_len = (uint64_t)(end - p);
            /* The old bytes are exactly [offset, max(offset, old_size)). */
            uint64_t want = r->old_size > r->offset ? r->old_size - r->offset : 0;
            ok = r->old_size <= r->offset + r->len && want == r->old_len && r->offset + r->len >= r->offset;
        }
        break;
    case JR_TRUNCATE_B:
        ok = take_u64(&p, end, &r->old_size) && take_u64(&p, end, &r->new_size) && take_str(&p, end, &r->path);
        if (ok) {
            r->old = p;
            r->old_len = (uint64_t)(end - p);
            ok = r->old_len == (r->old_size > r->new_size ? r->old_size - r->new_size : 0);
        }
        break;
    case JR_SYNC_B:
    case JR_CREATE_B:
    case JR_DIRSYNC_B: ok = take_str(&p, end, &r->path); break;
    case JR_RENAME_B:
        ok = take_str(&p, end, &r->path) && take_str(&p, end, &r->path2) && take_str(&p, end, &r->saved);
        break;
    case JR_UNLINK_B: ok = take_str(&p, end, &r->path) && take_str(&p, end, &r->saved); break;
    case JR_DONE: {
        uint64_t v;
        ok = take_u64(&p, end, &v);
        r->result = (int64_t)v;
        break;
    }
    case JR_DROP:
        ok = take_u64(&p, end, &r->offset) && take_u64(&p, end, &r->len) && take_str(&p, end, &r->path);
        break;
    default: ok = 0;
    }
    return ok ? JR_HDR + len : 0;
}

/* ---- the analysis (journal_int.h; shared with powerloss.c) ------------------------ */

/* String map: open addressing, linear probing, load at most 1/2. */

static size_t sm_slot(const char *k, size_t len, size_t cap) { return (size_t)XXH3_64bits(k, len) & (cap - 1); }

static int sm_grow(jr_strmap *m) {
    size_t ncap = m->cap ? 2 * m->cap : 64;
    char **nk = calloc(ncap, sizeof *nk);
    int *nv = calloc(ncap, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->key[i]) continue;
        size_t s = sm_slot(m->key[i], strlen(m->key[i]), ncap);
        while (nk[s]) s = (s + 1) & (ncap - 1);
        nk[s] = m->key[i];
        nv[s] = m->val[i];
    }
    free(m->key);
    free(m->val);
    m->key = nk;
    m->val = nv;
    m->cap = ncap;
    return 0;
}

/* The slot of K (LEN bytes): found (*found = 1) or where it would go.
 * M->cap > 0. */
static size_t sm_find(const jr_strmap *m, const char *k, size_t len, int *found) {
    size_t s = sm_slot(k, len, m->cap);
    while (m->key[s] && !(strlen(m->key[s]) == len && memcmp(m->key[s], k, len) == 0)) s = (s + 1) & (m->cap - 1);
    *found = m->key[s] != NULL;
    return s;
}

int flt_jr_sm_get(const jr_strmap *m, const char *k, size_t len) {
    if (!m->cap) return -1;
    int f;
    size_t s = sm_find(m, k, len, &f);
    return f ? m->val[s] : -1;
}

int flt_jr_sm_set(jr_strmap *m, const char *k, size_t len, int v) {
    if ((m->n + 1) * 2 > m->cap) {
        int rc = sm_grow(m);
        if (rc) return rc;
    }
    int f;
    size_t s = sm_find(m, k, len, &f);
    if (!f) {
        char *d = strndup(k, len);
        if (!d) return -ENOMEM;
        m->key[s] = d;
        m->n++;
    }
    m->val[s] = v;
    return 0;
}

void flt_jr_sm_free(jr_strmap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->key[i]);
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* Interval sets. */

int flt_jr_iv_add(jr_ivset *s, uint64_t a, uint64_t b) {
    if (a >= b) return 0;
    size_t i = 0;
    while (i < s->n && s->v[i].b < a) i++; /* first that touches or follows */
    size_t j = i;
    while (j < s->n && s->v[j].a <= b) {
        if (s->v[j].a < a) a = s->v[j].a;
        if (s->v[j].b > b) b = s->v[j].b;
        j++;
    }
    /* Replace v[i..j) by one interval. */
    if (i == j) {
        if (s->n == s->cap) {
            size_t ncap = s->cap ? 2 * s->cap : 16;
            jr_ivl *nv = realloc(s->v, ncap * sizeof *nv);
            if (!nv) return -ENOMEM;
            s->v = nv;
            s->cap = ncap;
        }
        memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
        s->n++;
    } else if (j - i > 1) {
        memmove(&s->v[i + 1], &s->v[j], (s->n - j) * sizeof *s->v);
        s->n -= j - i - 1;
    }
    s->v[i] = (jr_ivl){a, b};
    return 0;
}

uint64_t flt_jr_iv_max_end(const jr_ivset *s) { return s->n ? s->v[s->n - 1].b : 0; }

uint64_t flt_jr_iv_fixed_from(const jr_ivset *s) {
    return s->n && s->v[s->n - 1].b == UINT64_MAX ? s->v[s->n - 1].a : UINT64_MAX;
}

void flt_jr_iv_free(jr_ivset *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Loading. */

static int jv_add(jr_view *v, const jr_rec *r) {
    if (v->nops == v->cap) {
        size_t ncap = v->cap ? 2 * v->cap : 1024;
        jr_op *n = realloc(v->ops, ncap * sizeof *n);
        if (!n) return -ENOMEM;
        v->ops = n;
        v->cap = ncap;
    }
    jr_op *o = &v->ops[v->nops++];
    memset(o, 0, sizeof *o);
    o->r = *r;
    o->tok = o->dir1 = o->dir2 = -1;
    if (r->kind == JR_WRITE_B) o->write_no = v->writes++;
    if (r->kind == JR_SESSION) v->sessions++;
    v->records++;
    return 0;
}

int flt_jr_load(jr_view *v, const uint8_t *buf, size_t size, int whole) {
    memset(v, 0, sizeof *v);
    size_t pos = 0;
    jr_rec r;
    while (pos < size) {
        size_t n = flt_jr_decode(buf + pos, size - pos, &r);
        if (!n) {
            if (!whole) {
                v->torn = size - pos;
                break;
            }
            size_t p = pos + 1;
            while (p < size && !(buf[p] == (JR_MAGIC & 0xff) && flt_jr_decode(buf + p, size - p, &r))) p++;
            v->torn += p - pos;
            if (p < size && r.kind != JR_SESSION) {
                v->bad_at = pos;
                v->bad_next = p;
                return -EBADMSG;
            }
            pos = p;
            continue;
        }
        r.pos = pos;
        int rc = jv_add(v, &r);
        if (rc) return rc;
        pos += n;
    }
    return 0;
}

void flt_jr_view_free(jr_view *v) {
    free(v->ops);
    memset(v, 0, sizeof *v);
}

/* Step 1: durability. */

/* A synced-ness counter per inode (files) or per directory. */
typedef struct counter {
    uint64_t done;        /* DONEs seen so far */
    uint64_t synced_upto; /* DONEs below this rank are durable */
} counter;

typedef struct fwd {
    jr_strmap names; /* name -> inode token */
    counter *tok;
    size_t ntok, captok;
    jr_strmap dirs; /* directory -> counter index */
    counter *dir;
    size_t ndir, capdir;
    int err; /* first -ENOMEM */
} fwd;

/* A new counter's index, or -1 (F->err set). */
static int new_counter(fwd *f, counter **a, size_t *n, size_t *cap) {
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 64;
        counter *na = realloc(*a, ncap * sizeof *na);
        if (!na) {
            f->err = -ENOMEM;
            return -1;
        }
        *a = na;
        *cap = ncap;
    }
    (*a)[*n] = (counter){0, 0};
    return (int)(*n)++;
}

static void fwd_set(fwd *f, jr_strmap *m, const char *k, size_t len, int v) {
    int rc = flt_jr_sm_set(m, k, len, v);
    if (rc && !f->err) f->err = rc;
}

/* Token of the inode NAME denotes now (a new one for a name not seen). */
static int tok_of(fwd *f, jr_str s) {
    int t = flt_jr_sm_get(&f->names, s.p, s.len);
    if (t < 0) {
        t = new_counter(f, &f->tok, &f->ntok, &f->captok);
        if (t >= 0) fwd_set(f, &f->names, s.p, s.len, t);
    }
    return t;
}

static int dir_tok(fwd *f, const char *d, size_t len) {
    int t = flt_jr_sm_get(&f->dirs, d, len);
    if (t < 0) {
        t = new_counter(f, &f->dir, &f->ndir, &f->capdir);
        if (t >= 0) fwd_set(f, &f->dirs, d, len, t);
    }
    return t;
}

/* Counter of the directory holding the file NAME ("." for top level). */
static int parent_tok(fwd *f, jr_str s) {
    const char *slash = memrchr(s.p, '/', s.len);
    if (!slash) return dir_tok(f, ".", 1);
    return dir_tok(f, s.p, (size_t)(slash - s.p));
}

/* A create, rename or unlink that succeeded: the names now denote other
 * inodes. */
static void rebind_names(fwd *f, const jr_op *b) {
    if (b->r.kind == JR_CREATE_B) {
        int t = new_counter(f, &f->tok, &f->ntok, &f->captok);
        if (t >= 0) fwd_set(f, &f->names, b->r.path.p, b->r.path.len, t);
    } else if (b->r.kind == JR_RENAME_B) {
        int t = tok_of(f, b->r.path);
        fwd_set(f, &f->names, b->r.path2.p, b->r.path2.len, t);
        fwd_set(f, &f->names, b->r.path.p, b->r.path.len, -1);
    } else {
        fwd_set(f, &f->names, b->r.path.p, b->r.path.len, -1);
    }
}

/* A DONE: its BEGIN (of the current session, IDS) takes its result and
 * its rank among the DONEs of its inode or directory; a sync's moves the
 * durable mark up to the rank its BEGIN saw. */
static void note_done(fwd *f, jr_view *v, const jr_op *o, const jr_u64map *ids) {
    uint64_t bi;
    if (!flt_jr_um_get(ids, o->r.id + 1, &bi)) return; /* its BEGIN was reset away */
    jr_op *b = &v->ops[bi];
    if (b->has_done) return;
    b->has_done = 1;
    b->result = o->r.result;
    switch (b->r.kind) {
    case JR_WRITE_B:
    case JR_TRUNCATE_B: b->done_pos = f->tok[b->tok].done++; break;
    case JR_SYNC_B:
#if defined(ENG_BROKEN_JOURNAL_SYNC_COVERS_WRITES_DONE_DURING_IT)
        /* planted bug (tests/harness_mutants.txt): an fsync covers the writes completed by its
         * DONE, not by its BEGIN: a write that completed while the fsync
         * ran counts as synced and is never rolled back. */
        if (b->result >= 0 && f->tok[b->tok].synced_upto < f->tok[b->tok].done)
            f->tok[b->tok].synced_upto = f->tok[b->tok].done;
#elif defined(ENG_BROKEN_JOURNAL_FAILED_SYNC_COVERS)
        /* planted bug (tests/harness_mutants.txt): a failed fsync covers its writes as a
         * successful one does. */
        if (f->tok[b->tok].synced_upto < b->snap) f->tok[b->tok].synced_upto = b->snap;
#else
        if (b->result >= 0 && f->tok[b->tok].synced_upto < b->snap) f->tok[b->tok].synced_upto = b->snap;
#endif
        break;
    case JR_DIRSYNC_B:
        if (b->result >= 0 && f->dir[b->dir1].synced_upto < b->snap) f->dir[b->dir1].synced_upto = b->snap;
        break;
    case JR_CREATE_B:
    case JR_RENAME_B:
    case JR_UNLINK_B:
        if (b->result < 0) break;
        b->done_pos = f->dir[b->dir1].done++;
        if (b->dir2 >= 0) b->done_pos2 = f->dir[b->dir2].done++;
        rebind_names(f, b);
        break;
    }
}

/* A BEGIN: the counters of its inode or directories, and for a sync the
 * DONEs it covers.  0 when O is no BEGIN. */
static int note_begin(fwd *f, jr_op *o) {
    switch (o->r.kind) {
    case JR_WRITE_B:
    case JR_TRUNCATE_B: o->tok = tok_of(f, o->r.path); return 1;
    case JR_SYNC_B:
        o->tok = tok_of(f, o->r.path);
        if (o->tok >= 0) o->snap = f->tok[o->tok].done;
        return 1;
    case JR_DIRSYNC_B:
        o->dir1 = dir_tok(f, o->r.path.p, o->r.path.len);
        if (o->dir1 >= 0) o->snap = f->dir[o->dir1].done;
        return 1;
    case JR_CREATE_B:
    case JR_UNLINK_B: o->dir1 = parent_tok(f, o->r.path); return 1;
    case JR_RENAME_B:
        o->dir1 = parent_tok(f, o->r.path);
        o->dir2 = parent_tok(f, o->r.path2);
        if (o->dir2 == o->dir1) o->dir2 = -1;
        return 1;
    default: return 0;
    }
}

/* Each completed operation's durable flag from the marks the walk left. */
static void mark_durable(const fwd *f, jr_view *v) {
    for (size_t i = 0; i < v->nops; i++) {
        jr_op *o = &v->ops[i];
        if (!o->has_done) continue;
        switch (o->r.kind) {
        case JR_WRITE_B:
        case JR_TRUNCATE_B:
#ifdef ENG_BROKEN_JOURNAL_SYNC_MISSES_LAST_WRITE
            /* planted bug (tests/mutants.txt): off by one, the last write
             * completed before a successful fsync began counts as unsynced
             * and may be rolled back (or dropped by a failed fsync). */
            o->durable = o->done_pos + 1 < f->tok[o->tok].synced_upto;
#else
            o->durable = o->done_pos < f->tok[o->tok].synced_upto;
#endif
            break;
        case JR_CREATE_B:
        case JR_RENAME_B:
        case JR_UNLINK_B:
#ifdef ENG_BROKEN_JOURNAL_RENAME_DURABLE_WITHOUT_DIRSYNC
            /* planted bug (tests/harness_mutants.txt): a rename that succeeded counts as durable
             * without an fsync of its directories. */
            o->durable = o->result >= 0 &&
                         (o->r.kind == JR_RENAME_B || (o->done_pos < f->dir[o->dir1].synced_upto &&
                                                       (o->dir2 < 0 || o->done_pos2 < f->dir[o->dir2].synced_upto)));
#else
            o->durable = o->result >= 0 && o->done_pos < f->dir[o->dir1].synced_upto &&
                         (o->dir2 < 0 || o->done_pos2 < f->dir[o->dir2].synced_upto);
#endif
            break;
        }
    }
}

int flt_jr_durability(jr_view *v, jr_strmap *names) {
    fwd f;
    memset(&f, 0, sizeof f);
    jr_u64map ids; /* BEGIN id + 1 -> op index, for the current session */
    memset(&ids, 0, sizeof ids);
    for (size_t i = 0; i < v->nops && !f.err; i++) {
        jr_op *o = &v->ops[i];
        switch (o->r.kind) {
        case JR_SESSION:
            flt_jr_um_clear(&ids); /* DONEs match BEGINs of their own session */
            continue;
        case JR_DROP: {
            uint64_t bi;
            if (flt_jr_um_get(&ids, o->r.id + 1, &bi) && v->ops[bi].r.kind == JR_WRITE_B) v->ops[bi].dropped = 1;
            continue;
        }
        case JR_DONE: note_done(&f, v, o, &ids); continue;
        default: break;
        }
        if (!note_begin(&f, o) || f.err) continue;
        int rc = flt_jr_um_put(&ids, o->r.id + 1, i);
        if (rc) f.err = rc;
    }
    if (!f.err) mark_durable(&f, v);
    int rc = f.err;
    if (names && !rc)
        *names = f.names;
    else
        flt_jr_sm_free(&f.names);
    flt_jr_sm_free(&f.dirs);
    free(f.tok);
    free(f.dir);
    flt_jr_um_free(&ids);
    return rc;
}

/* Undoing a write or truncate tail. */

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
}

static int write_zeros(int fd, uint64_t a, uint64_t b) {
    static const uint8_t zero[65536];
    while (a < b) {
        size_t n = b - a < sizeof zero ? (size_t)(b - a) : sizeof zero;
        int rc = pwrite_all(fd, zero, n, a);
        if (rc) return rc;
        a += n;
    }
    return 0;
}

int flt_jr_undo_begin(jr_undo *u, int fd, const uint8_t *old, uint64_t base, uint64_t old_end) {
    memset(u, 0, sizeof *u);
    u->fd = fd;
    u->old = old;
    u->base = base;
    u->old_end = old_end;
    struct stat st;
    if (fstat(fd, &st) != 0) return u->err = -errno;
    u->size = (uint64_t)st.st_size;
    return 0;
}

/* Restore the old bytes of [X, Y) (not covered by the kept set); what lies
 * at or beyond old_end did not exist before: remember it for finish. */
static void undo_piece(jr_undo *u, uint64_t x, uint64_t y) {
    if (u->err) return;
    uint64_t m = y < u->old_end ? y : u->old_end;
    if (x < m) u->err = pwrite_all(u->fd, u->old + (x - u->base), (size_t)(m - x), x);
    if (m < x) m = x;
    if (!u->err && m < y) u->err = flt_jr_iv_add(&u->absent, m, y);
}

int flt_jr_undo_range(jr_undo *u, const jr_ivset *kept, uint64_t a, uint64_t b) {
    size_t i = 0;
    while (i < kept->n && kept->v[i].b <= a) i++;
    uint64_t x = a;
    for (; i < kept->n && kept->v[i].a < b && x < b; i++) {
        if (kept->v[i].a > x) undo_piece(u, x, kept->v[i].a);
        if (kept->v[i].b > x) x = kept->v[i].b;
    }
    if (x < b) undo_piece(u, x, b);
    return u->err;
}

int flt_jr_undo_finish(jr_undo *u, const jr_ivset *kept, uint64_t end) {
    if (!u->err && u->old_end < end) {
        uint64_t keep = flt_jr_iv_max_end(kept);
        uint64_t target = keep > u->old_end ? keep : u->old_end;
        if (u->size > target) {
            if (ftruncate(u->fd, (off_t)target) != 0)
                u->err = -errno;
            else
                u->size = target;
        }
    }
    for (size_t i = 0; i < u->absent.n && !u->err; i++) {
        uint64_t a = u->absent.v[i].a, b = u->absent.v[i].b;
        if (b > u->size) b = u->size;
        if (a < b) u->err = write_zeros(u->fd, a, b);
    }
    flt_jr_iv_free(&u->absent);
    return u->err;
}
