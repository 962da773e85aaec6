/*
 * trace.c -- the op trace of one worker (--trace_ops FILE) and its
 * replay (--replay_ops FILE): the one place that writes and parses the
 * format (docs/formats.md, "Op trace").
 *
 * Why a trace: a failing run of 400,000 drawn ops is read by nobody.
 * With one thread the run is deterministic from its seed, but removing
 * one op would shift every later draw (one random stream).  So every op
 * of a one-thread run (traced, replayed or neither) draws from a seed of
 * its own: the workload's stream and the fault library's streams are
 * reseeded from the op's seed before it runs (flt_thread_reseed).  The
 * trace of a run is then that run, the one that failed, and a shrinker
 * (crashtest.py shrink) can drop ops from the list and keep the rest as
 * they were, faults included.
 *
 * A line (text, one per op, '#' starts a comment):
 *
 *   INDEX TYPE KEY SEED FAULTS | what it did
 *   17 put 4711 9f3a0c5e11d2b7a4 on | 4711=v1a2b3c4d ioerr op=2:18 inj=1
 *
 *   INDEX   the op's number in the traced run (informational)
 *   TYPE    get put delete batch scan checkpoint verify reopen snapshot
 *           vacuum restart (snapshot takes one, or checks the one held;
 *           restart, never drawn, is a process's end and the next one's
 *           start in one: workload.c reopen(), a shrinker's fold)
 *   KEY     the key index (get, put, delete, scan start), or '-'; a
 *           restart's may be a list "name=value,..." of open options
 *           (cache_size, sync_mode ...: st_apply_open_list) the process
 *           it stands for opened with, over the command line's: the
 *           ops after it run as that process ran them (a shrinker's
 *           fold of steps that had options of their own); a restart
 *           with '-' opens with the command line's
 *   SEED    16 hex digits: the op's own seed (batch keys, value seeds,
 *           scan length, every fault draw during the op)
 *   FAULTS  'on', or 'off': no fault is injected during this op, or
 *           'flip:BLOCK:BIT': none either, but bit BIT of data block
 *           BLOCK is flipped right before it, where a tick's page flip
 *           comes (flt_flip_page_at): a shrinker pins a flip the traced
 *           run drew, so that ops removed before it do not move it;
 *           or 'cflip:BLOCK:BIT': the same for bit BIT of BLOCK's cached
 *           frame, where a tick's cache flip comes (flt_flip_cache_at;
 *           nothing when the block is not resident then);
 *           or 'kill:POINT:N': faults on, but the process is killed at
 *           the Nth time the op reaches kill point POINT (the traced
 *           run's kill, flt_kill_at) and no kill is drawn in it: a kill
 *           drawn 1 in N hits lands on another op as soon as one op
 *           before it goes, a pinned one stays in its op
 *   | ...   what the op did when traced: keys with value seeds (or 'del'),
 *           status, its number in the ledger's op field (op=EPOCH:CALL,
 *           the field being EPOCH << 32 | CALL), ledger lines it added
 *           (inj=N), or for the op a kill point ended, killed=POINT:N
 *           alone; replay ignores all of it
 *
 * A line is written in two parts, its head before the op runs and its
 * note after, so a process killed in the middle (a kill point,
 * --crash_at_end, a timer's SIGKILL) leaves every op it did, the one it
 * was killed in too.  They go into a shared mapping of the file, not
 * through write(2): the page cache keeps what a killed process stored
 * there, and a trace must not slow the run it records (two write()s an
 * op made a one-thread timed run do 3.4 times fewer ops, and a failure
 * that needs the volume did not come in a traced run).  The file is
 * grown ahead in steps and cut to its lines when the process ends; a
 * killed process leaves zero bytes after them, which readers ignore
 * (docs/formats.md, "Op trace").
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stress_int.h"

#define TRACE_STEP ((size_t)1 << 20) /* the least the file grows by */

/* Append N bytes of S to the trace.  When the file cannot grow, the rest
 * of the trace is lost and a note says so once (the run goes on: its
 * verdict does not rest on the trace). */
static void trace_put(st_trace *t, const char *s, size_t n) {
    if (t->fd < 0 || !t->map) return;
    if (t->used + n > t->cap) {
        size_t cap = t->cap * 2 > t->used + n + TRACE_STEP ? t->cap * 2 : t->used + n + TRACE_STEP;
        void *m = ftruncate(t->fd, (off_t)cap) ? MAP_FAILED : mremap(t->map, t->cap, cap, MREMAP_MAYMOVE);
        if (m == MAP_FAILED) {
            fprintf(stderr, "stress: --trace_ops: cannot grow %s to %zu bytes: %s (the trace ends here)\n", t->path,
                    cap, strerror(errno));
            munmap(t->map, t->cap);
            t->map = NULL;
            return;
        }
        t->map = m, t->cap = cap;
    }
    memcpy(t->map + t->used, s, n);
    t->used += n;
}

static int type_of(const char *s) {
    for (int t = 0; t < OP_TYPES; t++)
        if (!strcmp(st_op_names[t], s) && t != OP_ABORTED) return t;
    return -1;
}

/* Parse one line into OP: 1 an op, 0 a comment or blank, -1 malformed,
 * -2 out of memory. */
static int parse_fields(const st_options *o, char *line, st_trace_op *op);
static int parse_line(const st_options *o, char *line, st_trace_op *op) {
    /* parse_fields may have allocated either before it met a bad field */
    op->open_opts = op->kill_point = NULL;
    int r = parse_fields(o, line, op);
    if (r < 0) {
        free(op->open_opts);
        free(op->kill_point);
        op->open_opts = op->kill_point = NULL;
    }
    return r;
}

static int parse_fields(const st_options *o, char *line, st_trace_op *op) {
    char *bar = strchr(line, '|');
    if (bar) *bar = 0;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *tok[6];
    int n = 0;
    for (char *s = strtok(line, " \t\r\n"); s && n < 6; s = strtok(NULL, " \t\r\n")) tok[n++] = s;
    if (n == 0) return 0;
    if (n != 5) return -1;
    char *end;
    errno = 0;
    op->index = strtoull(tok[0], &end, 10);
    if (*end || errno) return -1;
    op->type = type_of(tok[1]);
    if (op->type < 0) return -1;
    op->has_key = strcmp(tok[2], "-") != 0;
    op->key = 0;
    if (op->has_key && op->type == OP_RESTART) {
        st_options scratch = *o;
        if (st_apply_open_list(&scratch, tok[2])) return -1;
        if (!(op->open_opts = strdup(tok[2]))) return -2;
        op->has_key = 0;
    } else if (op->has_key) {
        op->key = strtoull(tok[2], &end, 10);
        if (*end || errno || op->key >= o->max_key) return -1;
    }
    op->seed = strtoull(tok[3], &end, 16);
    if (*end || errno) return -1;
    op->pinned = PIN_NONE;
    op->kill_nth = 0;
    if (!strcmp(tok[4], "on"))
        op->faults_off = 0;
    else if (!strcmp(tok[4], "off"))
        op->faults_off = 1;
    else if (!strncmp(tok[4], "flip:", 5) || !strncmp(tok[4], "cflip:", 6)) {
        int cache = tok[4][0] == 'c';
        const char *at = tok[4] + (cache ? 6 : 5);
        op->faults_off = 1;
        op->pinned = cache ? PIN_CACHE : PIN_PAGE;
        op->pin_block = strtoull(at, &end, 10);
        if (end == at || *end != ':' || errno) return -1;
        char *bit = end + 1;
        op->pin_bit = strtoull(bit, &end, 10);
        if (end == bit || *end || errno) return -1;
    } else if (!strncmp(tok[4], "kill:", 5)) {
        char *point = tok[4] + 5, *colon = strrchr(point, ':');
        if (!colon || colon[1] == 0) return -1;
        *colon = 0;
        op->faults_off = 0;
        op->kill_nth = strtoull(colon + 1, &end, 10);
        if (*end || errno || op->kill_nth == 0 || strchr(point, ',') || !flt_kill_points_valid(point)) return -1;
        if (!(op->kill_point = strdup(point))) return -2;
    } else
        return -1;
    int keyed = op->type == OP_GET || op->type == OP_PUT || op->type == OP_DEL || op->type == OP_SCAN;
    return keyed == op->has_key ? 1 : -1;
}

int st_trace_open(st_trace *t, const st_options *o) {
    *t = (st_trace){.fd = -1, .path = o->trace_ops, .replaying = o->replay_ops != NULL};
    if (o->replay_ops) {
        FILE *f = fopen(o->replay_ops, "r");
        if (!f) {
            fprintf(stderr, "stress: --replay_ops: cannot open %s: %s\n", o->replay_ops, strerror(errno));
            return EXIT_USAGE;
        }
        char line[1024];
        size_t cap = 0, lineno = 0;
        while (fgets(line, sizeof line, f)) {
            lineno++;
            st_trace_op op;
            int r = parse_line(o, line, &op);
            if (r == -2) {
                fclose(f);
                return EXIT_INFRA;
            }
            if (r < 0) {
                fprintf(stderr, "stress: --replay_ops: %s:%zu: not an op line (docs/formats.md, Op trace)\n",
                        o->replay_ops, lineno);
                fclose(f);
                return EXIT_USAGE;
            }
            if (!r) continue;
            if (t->nreplay == cap) {
                cap = cap ? 2 * cap : 256;
                st_trace_op *p = realloc(t->replay, cap * sizeof *p);
                if (!p) {
                    free(op.kill_point);
                    free(op.open_opts);
                    fclose(f);
                    return EXIT_INFRA;
                }
                t->replay = p;
            }
            t->replay[t->nreplay++] = op;
            t->pins_kill |= op.kill_point != NULL;
            t->pins_flip |= op.pinned ? 1u << op.pinned : 0;
        }
        fclose(f);
    }
    if (o->trace_ops) {
        t->fd = open(o->trace_ops, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (t->fd < 0) {
            fprintf(stderr, "stress: --trace_ops: cannot create %s: %s\n", o->trace_ops, strerror(errno));
            return EXIT_INFRA;
        }
        t->cap = TRACE_STEP, t->used = 0;
        void *m = ftruncate(t->fd, (off_t)t->cap) ? MAP_FAILED
                                                  : mmap(NULL, t->cap, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "stress: --trace_ops: cannot map %s: %s\n", o->trace_ops, strerror(errno));
            close(t->fd);
            t->fd = -1;
            return EXIT_INFRA;
        }
        t->map = m;
        char head[256];
        int n = snprintf(head, sizeof head,
                         "# stress op trace 1: seed %" PRIu64 " max_key %" PRIu64
                         "\n# INDEX TYPE KEY SEED FAULTS | what it did\n",
                         o->seed, o->max_key);
        trace_put(t, head, (size_t)n);
    }
    return -1; /* go on */
}

int st_tracing(const st_trace *t) { return t->fd >= 0; }
int st_replaying(const st_trace *t) { return t->replaying; }
int st_replay_pins_kill(const st_trace *t) { return t->pins_kill; }
int st_replay_pins_flip(const st_trace *t, int kind) { return (t->pins_flip >> kind) & 1; }
size_t st_replay_count(const st_trace *t) { return t->nreplay; }
const st_trace_op *st_replay_at(const st_trace *t, size_t i) { return i < t->nreplay ? &t->replay[i] : NULL; }

uint64_t st_trace_seed(uint64_t seed, uint64_t index) {
    return rng_mix64(seed ^ rng_mix64(index + 1) ^ 0x6f70736565640000ull);
}

/* The line's head goes out before the op runs, its note after: an op
 * that a kill point ends halfway stays in the trace (a head alone, which
 * replays like any line), and its replay is killed at the same place. */
void st_trace_head(st_trace *t, const st_trace_op *op) {
    if (t->fd < 0) return;
    char line[768], key[520] = "-", faults[128];
    if (op->has_key) snprintf(key, sizeof key, "%" PRIu64, op->key);
    if (op->open_opts) snprintf(key, sizeof key, "%s", op->open_opts);
    if (op->pinned)
        snprintf(faults, sizeof faults, "%s:%" PRIu64 ":%" PRIu64, op->pinned == PIN_CACHE ? "cflip" : "flip",
                 op->pin_block, op->pin_bit);
    else if (op->kill_point)
        snprintf(faults, sizeof faults, "kill:%s:%" PRIu64, op->kill_point, op->kill_nth);
    else
        snprintf(faults, sizeof faults, "%s", op->faults_off ? "off" : "on");
    int n = snprintf(line, sizeof line, "%" PRIu64 " %s %s %016" PRIx64 " %s", op->index, st_op_names[op->type], key,
                     op->seed, faults);
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    trace_put(t, line, (size_t)n);
    t->head_out = 1;
}

void st_trace_note(st_trace *t, const char *note, uint64_t injected) {
    if (t->fd < 0) return;
    char line[1024];
    int n = snprintf(line, sizeof line, " | %s inj=%" PRIu64 "\n", note, injected);
    if (n >= (int)sizeof line) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    trace_put(t, line, (size_t)n);
    t->head_out = 0;
}

/* Called from flt_options.before_kill, on the thread that is killed: in
 * the shared mapping, so in the page cache, before the SIGKILL. */
void st_trace_killed(st_trace *t, const char *point, uint64_t nth) {
    if (t->fd < 0 || !t->head_out) return;
    char line[160];
    int n = snprintf(line, sizeof line, " | killed=%s:%" PRIu64 "\n", point, nth);
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    trace_put(t, line, (size_t)n);
    t->head_out = 0;
}

void st_trace_close(st_trace *t) {
    if (t->fd >= 0) {
        if (t->map) munmap(t->map, t->cap);
        if (ftruncate(t->fd, (off_t)t->used)) {} /* its lines alone; a reader ignores zero bytes anyway */
        close(t->fd);
    }
    t->map = NULL;
    t->fd = -1;
    for (size_t i = 0; i < t->nreplay; i++) {
        free(t->replay[i].kill_point);
        free(t->replay[i].open_opts);
    }
    free(t->replay);
    t->replay = NULL;
    t->nreplay = 0;
}
