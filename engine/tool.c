/*
 * tool.c -- engine-tool: the command-line window onto a database directory.
 *
 * What it is for: looking at a database from the outside, the way an
 * operator (or a test script, or the stress driver's triage) would:
 *
 *   verify DIR              every page checked; one "corruption:" line per
 *                           problem, an "unchecked:" line naming the pages
 *                           that could not be checked (if any), then
 *                           "verify: N problems"
 *   stat DIR                options, sizes and counters as JSON
 *   dump-page DIR BLOCK     one raw block decoded, pageinspect style
 *   load DIR --keys N ...   write keys k000000000000000.. with values
 *                           derived from (index, seed)
 *   check DIR --keys N ...  prove the keys present are exactly 0..m-1 with
 *                           the values load wrote
 *   get DIR KEY             one value, raw bytes on stdout
 *   checkpoint DIR          open, eng_checkpoint, close
 *   waldump DIR             every WAL record from the redo point, one line
 *                           each, decoded (pg_waldump style)
 *
 * It uses the public API of engine/engine.h for everything that opens the
 * database.  What must work on a database the engine refuses to open reads
 * the files itself, through the engine's own decoders: engine/page.h for a
 * raw block (dump-page); control.h, wal.h and pageop.h for the log
 * (waldump, and the log pass of verify).  Those never write anything.
 *
 * Exit codes (other tools read them; keep them stable):
 *   0  success / clean / found
 *   1  the database is corrupt, a check failed, or (get) the key is absent
 *   2  usage error, I/O error, busy or invalid database; for usage errors
 *      nothing at all was written (every argument is parsed and validated
 *      before anything is opened or created)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "control.h"
#include "engine.h"
#include "io.h"
#include "page.h"
#include "pageop.h"
#include "status.h"
#include "wal.h"

#define EXIT_OK 0
#define EXIT_PROBLEM 1
#define EXIT_ERROR 2

#define KEY_LEN 16                      /* "k" + 15 digits */
#define MAX_KEYS 1000000000000000ull    /* 10^15: indexes fit in 15 digits */
#define DEFAULT_VALUE_SIZE 100u
#define MAX_REPORTED 10                 /* per kind of problem in check */
#define SHOW_KEY_BYTES 48               /* dump-page truncates longer keys */
#define WALDUMP_OPS 3                   /* waldump shows this many ops of a batch */
#define MAX_WAL_SEG_SIZE (1ull << 32)   /* the engine's limit */
#define MIN_WAL_SEG_SIZE (64ull << 10)

/* ---- arguments ------------------------------------------------------------ */

enum tool_opt {
    OPT_KEYS = 1u << 0,
    OPT_VALUE_SIZE = 1u << 1,
    OPT_SEED = 1u << 2,
    OPT_PAGE_SIZE = 1u << 3,
    OPT_NO_CHECKSUMS = 1u << 4,
    OPT_CACHE_SIZE = 1u << 5,
    OPT_IO_BACKEND = 1u << 6,
    OPT_SYNC = 1u << 7,
    OPT_FULL_PAGE_WRITES = 1u << 8,
    OPT_WAL_COMPRESSION = 1u << 9,
    OPT_WAL_SEGMENT_SIZE = 1u << 10,
    OPT_ARCHIVE_DIR = 1u << 11,
    OPT_CHECKPOINT_WAL_BYTES = 1u << 12,
    OPT_FROM = 1u << 13,
    OPT_LIMIT = 1u << 14,
};
#define OPT_OPEN_TIME (OPT_CACHE_SIZE | OPT_IO_BACKEND)
#define OPT_LOG (OPT_SYNC | OPT_FULL_PAGE_WRITES | OPT_WAL_COMPRESSION | OPT_WAL_SEGMENT_SIZE | \
                 OPT_ARCHIVE_DIR | OPT_CHECKPOINT_WAL_BYTES)

typedef struct tool_args {
    const char *dir;
    const char *arg2;           /* dump-page: BLOCK; get: KEY */
    unsigned given;             /* enum tool_opt bits seen */
    uint64_t keys;
    uint64_t value_size;
    uint64_t seed;
    uint32_t page_size;
    int data_checksums;
    uint64_t cache_size;
    int io_backend;
    int sync_mode;              /* eng_sync_mode */
    int full_page_writes;
    int wal_compression;        /* eng_wal_compression */
    uint64_t wal_segment_size;
    const char *archive_dir;
    uint64_t checkpoint_wal_bytes;
    uint64_t from;              /* waldump: start LSN */
    const char *from_str;       /* as given */
    int from_oldest;            /* waldump --from oldest */
    uint64_t limit;             /* waldump: records to show */
    uint64_t block;             /* dump-page, parsed from arg2 */
} tool_args;

static const struct tool_opt_def {
    const char *name;
    unsigned bit;
    int has_value;
} opt_defs[] = {
    {"--keys", OPT_KEYS, 1},
    {"--value-size", OPT_VALUE_SIZE, 1},
    {"--seed", OPT_SEED, 1},
    {"--page-size", OPT_PAGE_SIZE, 1},
    {"--no-data-checksums", OPT_NO_CHECKSUMS, 0},
    {"--cache-size", OPT_CACHE_SIZE, 1},
    {"--io-backend", OPT_IO_BACKEND, 1},
    {"--sync", OPT_SYNC, 1},
    {"--full-page-writes", OPT_FULL_PAGE_WRITES, 1},
    {"--wal-compression", OPT_WAL_COMPRESSION, 1},
    {"--wal-segment-size", OPT_WAL_SEGMENT_SIZE, 1},
    {"--archive-dir", OPT_ARCHIVE_DIR, 1},
    {"--checkpoint-wal-bytes", OPT_CHECKPOINT_WAL_BYTES, 1},
    {"--from", OPT_FROM, 1},
    {"--limit", OPT_LIMIT, 1},
};

static int cmd_verify(const tool_args *a);
static int cmd_stat(const tool_args *a);
static int cmd_dump_page(const tool_args *a);
static int cmd_load(const tool_args *a);
static int cmd_check(const tool_args *a);
static int cmd_get(const tool_args *a);
static int cmd_checkpoint(const tool_args *a);
static int cmd_waldump(const tool_args *a);
static int cmd_vacuum(const tool_args *a);

static const struct tool_cmd {
    const char *name;
    int npos;                   /* positional arguments, DIR included */
    unsigned allowed;           /* options it takes */
    unsigned required;          /* options it must have */
    int (*run)(const tool_args *a);
    const char *synopsis;
} commands[] = {
    {"verify", 1, OPT_OPEN_TIME, 0, cmd_verify, "verify DIR"},
    {"stat", 1, OPT_OPEN_TIME, 0, cmd_stat, "stat DIR"},
    {"dump-page", 2, OPT_PAGE_SIZE, 0, cmd_dump_page, "dump-page DIR BLOCK [--page-size B]"},
    {"load", 1,
     OPT_KEYS | OPT_VALUE_SIZE | OPT_SEED | OPT_PAGE_SIZE | OPT_NO_CHECKSUMS | OPT_OPEN_TIME |
         OPT_LOG,
     OPT_KEYS, cmd_load,
     "load DIR --keys N [--value-size B] [--seed S] [--page-size 4096|8192|16384]\n"
     "                   [--no-data-checksums] [--cache-size BYTES] [--io-backend uring|psync]\n"
     "                   [--sync commit|group|off] [--full-page-writes on|off]\n"
     "                   [--wal-compression none|zstd] [--wal-segment-size BYTES]\n"
     "                   [--archive-dir DIR] [--checkpoint-wal-bytes N]"},
    {"check", 1, OPT_KEYS | OPT_VALUE_SIZE | OPT_SEED | OPT_OPEN_TIME | OPT_SYNC, OPT_KEYS,
     cmd_check, "check DIR --keys N [--value-size B] [--seed S] [--sync commit|group|off]"},
    {"get", 2, OPT_OPEN_TIME, 0, cmd_get, "get DIR KEY"},
    {"checkpoint", 1, OPT_OPEN_TIME | OPT_ARCHIVE_DIR, 0, cmd_checkpoint,
     "checkpoint DIR [--archive-dir DIR]"},
    {"waldump", 1, OPT_FROM | OPT_LIMIT, 0, cmd_waldump,
     "waldump DIR [--from LSN|oldest] [--limit N]"},
    {"vacuum", 1, OPT_OPEN_TIME | OPT_ARCHIVE_DIR, 0, cmd_vacuum, "vacuum DIR [--archive-dir DIR]"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: engine-tool COMMAND ARGS...\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  engine-tool %s\n", commands[i].synopsis);
    fprintf(f,
            "\n"
            "verify, stat, check, get and checkpoint also take --cache-size BYTES and\n"
            "--io-backend uring|psync.  Options may come before or after DIR;\n"
            "\"--\" ends them (for a KEY that starts with '-').\n"
            "\n"
            "load writes keys \"k\" + 15-digit index (0..N-1) with --value-size bytes\n"
            "(default %u) derived from (index, --seed), one commit (eng_put) per key,\n"
            "and prints \"loaded N keys, last_seq=S durable_seq=D\" (the sequences as\n"
            "the engine reported them before the closing checkpoint); check proves\n"
            "the present keys are exactly 0..m-1 with those values and prints\n"
            "present=m.\n"
            "\n"
            "Log options: --sync commit (fsync per commit, default), group (one fsync\n"
            "for every waiting commit) or off (durable at the next sync or\n"
            "checkpoint); --full-page-writes on|off (default on); --wal-compression\n"
            "none|zstd (full-page images); --wal-segment-size BYTES (a power of two,\n"
            "at least 65536; taken when the database is created; default 16 MiB);\n"
            "--archive-dir DIR (finished segments are copied there before removal);\n"
            "--checkpoint-wal-bytes N (checkpoint after N bytes of log; 0 = only\n"
            "explicit checkpoints and close).\n"
            "\n"
            "verify checks every page, then reads every WAL record from the redo\n"
            "point; a damaged record in the synced part of the log is a problem.\n"
            "\n"
            "waldump reads the log itself (no engine open, nothing written), from\n"
            "the control file's redo point or --from (a record's LSN, in hex as\n"
            "printed, 0x optional; \"oldest\" = first record of the oldest segment),\n"
            "one line per record:\n"
            "  lsn=0x.. len=N type=batch|pages|checkpoint prev=0x.. SUMMARY\n"
            "(len counts the 32-byte record header), then \"end of log at lsn=0x..\"\n"
            "with \"(torn tail trimmed)\" if invalid bytes after the end were cut.  A\n"
            "damaged record in the synced part prints a \"corruption:\" line, exit 1.\n"
            "\n"
            "exit status: 0 ok, 1 corruption / check failed / key not found,\n"
            "             2 usage, I/O, busy or invalid database\n",
            DEFAULT_VALUE_SIZE);
}

static int usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "engine-tool: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nTry 'engine-tool --help'.\n");
    return EXIT_ERROR;
}

/* Parse a decimal unsigned number: digits only (no sign, no space, no
 * suffix), no overflow, at most MAX.  Returns 0 on success. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (s == NULL || s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

/* Parse an LSN: hexadecimal digits, "0x" optional (waldump prints LSNs in
 * hex), no overflow.  Returns 0 on success. */
static int parse_lsn(const char *s, uint64_t *out)
{
    if (s == NULL)
        return -1;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (s[0] == '\0' || strspn(s, "0123456789abcdefABCDEF") != strlen(s) || strlen(s) > 16)
        return -1;
    *out = strtoull(s, NULL, 16);
    return 0;
}

/* Store the value of option DEF.  Returns 0, or EXIT_ERROR after a message. */
static int set_option(tool_args *a, const struct tool_opt_def *def, const char *v)
{
    uint64_t n = 0;
    switch (def->bit) {
    case OPT_KEYS:
        if (parse_u64(v, MAX_KEYS, &a->keys))
            return usage_error("--keys: not a number of keys (0..10^15): '%s'", v);
        break;
    case OPT_VALUE_SIZE:
        if (parse_u64(v, ENG_MAX_VALUE, &a->value_size))
            return usage_error("--value-size: not a size in bytes (0..64 MiB): '%s'", v);
        break;
    case OPT_SEED:
        if (parse_u64(v, UINT64_MAX, &a->seed))
            return usage_error("--seed: not an unsigned 64-bit number: '%s'", v);
        break;
    case OPT_PAGE_SIZE:
        if (parse_u64(v, UINT32_MAX, &n) || (n != 4096 && n != 8192 && n != 16384))
            return usage_error("--page-size: must be 4096, 8192 or 16384, not '%s'", v);
        a->page_size = (uint32_t)n;
        break;
    case OPT_NO_CHECKSUMS:
        a->data_checksums = 0;
        break;
    case OPT_CACHE_SIZE:
        if (parse_u64(v, SIZE_MAX, &a->cache_size) || a->cache_size == 0)
            return usage_error("--cache-size: not a size in bytes: '%s'", v);
        break;
    case OPT_IO_BACKEND:
        if (strcmp(v, "uring") == 0)
            a->io_backend = ENG_IO_URING;
        else if (strcmp(v, "psync") == 0)
            a->io_backend = ENG_IO_PSYNC;
        else
            return usage_error("--io-backend: must be uring or psync, not '%s'", v);
        break;
    case OPT_SYNC:
        if (strcmp(v, "commit") == 0)
            a->sync_mode = ENG_SYNC_COMMIT;
        else if (strcmp(v, "group") == 0)
            a->sync_mode = ENG_SYNC_GROUP;
        else if (strcmp(v, "off") == 0)
            a->sync_mode = ENG_SYNC_OFF;
        else
            return usage_error("--sync: must be commit, group or off, not '%s'", v);
        break;
    case OPT_FULL_PAGE_WRITES:
        if (strcmp(v, "on") == 0)
            a->full_page_writes = 1;
        else if (strcmp(v, "off") == 0)
            a->full_page_writes = 0;
        else
            return usage_error("--full-page-writes: must be on or off, not '%s'", v);
        break;
    case OPT_WAL_COMPRESSION:
        if (strcmp(v, "none") == 0)
            a->wal_compression = ENG_WAL_COMPRESSION_NONE;
        else if (strcmp(v, "zstd") == 0)
            a->wal_compression = ENG_WAL_COMPRESSION_ZSTD;
        else
            return usage_error("--wal-compression: must be none or zstd, not '%s'", v);
        break;
    case OPT_WAL_SEGMENT_SIZE:
        if (parse_u64(v, MAX_WAL_SEG_SIZE, &n) || n < MIN_WAL_SEG_SIZE || (n & (n - 1)))
            return usage_error("--wal-segment-size: must be a power of two from 65536 to "
                               "4294967296 bytes, not '%s'", v);
        a->wal_segment_size = n;
        break;
    case OPT_ARCHIVE_DIR:
        if (v[0] == '\0' || strlen(v) >= 4000)
            return usage_error("--archive-dir: must be a directory path, not '%s'", v);
        a->archive_dir = v;
        break;
    case OPT_CHECKPOINT_WAL_BYTES:
        if (parse_u64(v, UINT64_MAX, &a->checkpoint_wal_bytes))
            return usage_error("--checkpoint-wal-bytes: not a number of bytes: '%s'", v);
        break;
    case OPT_FROM:
        a->from_str = v;
        if (strcmp(v, "oldest") == 0) {
            a->from_oldest = 1;
        } else if (parse_lsn(v, &a->from)) {
            return usage_error("--from: not an LSN (hex, as waldump prints it) or 'oldest': '%s'",
                               v);
        } else if ((a->from & 7) || (a->from % WAL_BLOCK != 0 && a->from % WAL_BLOCK < WAL_BLOCK_HDR)) {
            return usage_error("--from: %s cannot start a record (LSNs of records are 8-aligned "
                               "and never inside a block header)", v);
        }
        break;
    case OPT_LIMIT:
        if (parse_u64(v, UINT64_MAX, &a->limit) || a->limit == 0)
            return usage_error("--limit: not a number of records (1 or more): '%s'", v);
        break;
    }
    a->given |= def->bit;
    return 0;
}

/* Parse argv[2..] for CMD into A.  Returns 0, or EXIT_ERROR after a message
 * (or EXIT_OK with *help set when --help was asked for). */
static int parse_args(const struct tool_cmd *cmd, int argc, char **argv, tool_args *a, int *help)
{
    const char *pos[2] = {NULL, NULL};
    int npos = 0, options_done = 0;

    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        if (!options_done && strcmp(s, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (!options_done && (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)) {
            *help = 1;
            return EXIT_OK;
        }
        if (!options_done && s[0] == '-' && s[1] != '\0') {
            const char *eq = strchr(s, '=');
            size_t nlen = eq ? (size_t)(eq - s) : strlen(s);
            const struct tool_opt_def *def = NULL;
            for (size_t k = 0; k < sizeof opt_defs / sizeof opt_defs[0]; k++)
                if (strlen(opt_defs[k].name) == nlen && strncmp(opt_defs[k].name, s, nlen) == 0)
                    def = &opt_defs[k];
            if (def == NULL || !(cmd->allowed & def->bit)) {
                fprintf(stderr, "engine-tool: %s: unknown option '%.*s'\n"
                        "Try 'engine-tool --help'.\n", cmd->name, (int)nlen, s);
                return EXIT_ERROR;
            }
            const char *v = NULL;
            if (def->has_value) {
                if (eq)
                    v = eq + 1;
                else if (i + 1 < argc)
                    v = argv[++i];
                else
                    return usage_error("option %s needs a value", def->name);
            } else if (eq) {
                return usage_error("option %s takes no value", def->name);
            }
            int rc = set_option(a, def, v);
            if (rc)
                return rc;
            continue;
        }
        if (npos >= cmd->npos) {
            fprintf(stderr, "engine-tool: %s: unexpected argument '%s'\n"
                    "usage: engine-tool %s\n", cmd->name, s, cmd->synopsis);
            return EXIT_ERROR;
        }
        pos[npos++] = s;
    }
    if (npos < cmd->npos) {
        fprintf(stderr, "engine-tool: %s: missing %s\nusage: engine-tool %s\n", cmd->name,
                npos == 0 ? "DIR" : (strcmp(cmd->name, "get") == 0 ? "KEY" : "BLOCK"),
                cmd->synopsis);
        return EXIT_ERROR;
    }
    unsigned missing = cmd->required & ~a->given;
    for (size_t k = 0; k < sizeof opt_defs / sizeof opt_defs[0]; k++)
        if (missing & opt_defs[k].bit)
            return usage_error("missing required option %s", opt_defs[k].name);

    a->dir = pos[0];
    a->arg2 = pos[1];
    if (a->dir[0] == '\0')
        return usage_error("%sDIR must not be empty", "");
    if (cmd->run == cmd_dump_page && parse_u64(a->arg2, UINT32_MAX, &a->block))
        return usage_error("dump-page: BLOCK must be a block number, not '%s'", a->arg2);
    if (cmd->run == cmd_get) {
        size_t kl = strlen(a->arg2);
        if (kl == 0 || kl > ENG_MAX_KEY)
            return usage_error("get: KEY must be 1..1024 bytes%s", "");
    }
    /* The cache must hold 16 pages.  Checked here when the page size is
     * known without opening anything: the explicit --page-size, or the
     * default when the database does not exist yet. */
    if (a->given & OPT_CACHE_SIZE) {
        char ctl[4096];
        uint64_t ps = 0;
        if (a->given & OPT_PAGE_SIZE)
            ps = a->page_size;
        else if (snprintf(ctl, sizeof ctl, "%s/control", a->dir) < (int)sizeof ctl &&
                 access(ctl, F_OK) != 0)
            ps = 8192;
        if (ps && a->cache_size < 16 * ps) {
            fprintf(stderr, "engine-tool: --cache-size: %" PRIu64 " bytes is below the minimum "
                    "of 16 pages (%" PRIu64 " bytes)\n", a->cache_size, 16 * ps);
            return EXIT_ERROR;
        }
    }
    return 0;
}

/* ---- corruption reports ---------------------------------------------------- */

/* The last report delivered through on_corruption, kept so that a failed
 * eng_open (which leaves no handle for eng_last_corruption) can still be
 * explained. */
static struct {
    pthread_mutex_t mu;
    uint64_t count;
    eng_corruption last;
} open_reports = {PTHREAD_MUTEX_INITIALIZER, 0, {0}};

static void remember_report(void *ctx, const eng_corruption *r)
{
    (void)ctx;
    pthread_mutex_lock(&open_reports.mu);
    open_reports.count++;
    open_reports.last = *r;
    pthread_mutex_unlock(&open_reports.mu);
}

static void print_report(FILE *f, const eng_corruption *r)
{
    char line[512];
    eng_corruption_format(r, line, sizeof line);
    fprintf(f, "%s\n", line);
}

/* Exit code for a failed engine call. */
static int status_exit(int st)
{
    return st == ENG_CORRUPTION ? EXIT_PROBLEM : EXIT_ERROR;
}

/* Explain a failed call on DB (may be NULL after a failed open) to F. */
static void explain_failure(FILE *f, const char *what, const char *dir, int st, eng_db *db)
{
    fprintf(stderr, "engine-tool: %s %s: %s\n", what, dir, eng_strerror(st));
    if (st != ENG_CORRUPTION)
        return;
    eng_corruption r;
    if (db && eng_last_corruption(db, &r)) {
        print_report(f, &r);
        return;
    }
    pthread_mutex_lock(&open_reports.mu);
    int have = open_reports.count > 0;
    r = open_reports.last;
    pthread_mutex_unlock(&open_reports.mu);
    if (have)
        print_report(f, &r);
}

/* How a command opens the database. */
enum tool_open_mode {
    TOOL_READ,      /* read-only; the database must exist */
    TOOL_WRITE,     /* read-write; the database must exist */
    TOOL_CREATE,    /* read-write, created if missing */
};

static void base_options(const tool_args *a, eng_options *o, int mode)
{
    eng_options_init(o);
    o->create_if_missing = mode == TOOL_CREATE;
    o->read_only = mode == TOOL_READ;
    if (a->given & OPT_PAGE_SIZE)
        o->page_size = a->page_size;
    if (a->given & OPT_NO_CHECKSUMS)
        o->data_checksums = 0;
    if (a->given & OPT_CACHE_SIZE)
        o->cache_size = (size_t)a->cache_size;
    if (a->given & OPT_IO_BACKEND)
        o->io_backend = a->io_backend;
    if (a->given & OPT_SYNC)
        o->sync_mode = a->sync_mode;
    if (a->given & OPT_FULL_PAGE_WRITES)
        o->full_page_writes = a->full_page_writes;
    if (a->given & OPT_WAL_COMPRESSION)
        o->wal_compression = a->wal_compression;
    if (a->given & OPT_WAL_SEGMENT_SIZE)
        o->wal_segment_size = a->wal_segment_size;
    if (a->given & OPT_ARCHIVE_DIR)
        o->archive_dir = a->archive_dir;
    if (a->given & OPT_CHECKPOINT_WAL_BYTES)
        o->checkpoint_wal_bytes = a->checkpoint_wal_bytes;
    o->on_corruption = remember_report;
    o->on_corruption_ctx = NULL;
}

/* A database that is not being created must already be a directory: say
 * so plainly instead of whatever the engine makes of a missing path. */
static int require_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        fprintf(stderr, "engine-tool: open %s: %s\n", dir, strerror(errno));
        return EXIT_ERROR;
    }
    if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "engine-tool: open %s: not a database directory\n", dir);
        return EXIT_ERROR;
    }
    return 0;
}

/* Open DIR as MODE says.  Returns 0 with *db set, or an exit code after
 * explaining the failure; reports go to REPORT_TO. */
static int tool_open(const tool_args *a, int mode, FILE *report_to, eng_db **db)
{
    *db = NULL;
    if (mode != TOOL_CREATE) {
        int rc = require_dir(a->dir);
        if (rc)
            return rc;
    }
    eng_options o;
    base_options(a, &o, mode);
    int st = eng_open(a->dir, &o, db);
    if (st != ENG_OK) {
        *db = NULL;
        explain_failure(report_to, "open", a->dir, st, NULL);
        return status_exit(st);
    }
    return 0;
}

/* ---- keys and values -------------------------------------------------------- */

static void key_for(uint64_t index, char key[KEY_LEN + 8])
{
    snprintf(key, KEY_LEN + 8, "k%015llu", (unsigned long long)index);
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The value load writes for key INDEX: LEN bytes of a splitmix64 stream
 * seeded by (INDEX, SEED).  Deterministic; check recomputes it. */
static void value_for(uint64_t index, uint64_t seed, uint8_t *buf, size_t len)
{
    uint64_t state = (index * 0x9E3779B97F4A7C15ull) ^ seed;
    for (size_t off = 0; off < len; off += 8) {
        uint64_t r = splitmix64(&state);
        size_t n = len - off < 8 ? len - off : 8;
        memcpy(buf + off, &r, n);
    }
}

/* Printable form of a key: printable ASCII as is, other bytes \xNN,
 * at most MAXSHOW bytes then "...".  OUT needs 4 * MAXSHOW + 4 bytes. */
static const char *escape_key(const uint8_t *k, size_t len, size_t maxshow, char *out)
{
    size_t o = 0, n = len < maxshow ? len : maxshow;
    for (size_t i = 0; i < n; i++) {
        if (k[i] >= 0x20 && k[i] < 0x7f)
            out[o++] = (char)k[i];
        else
            o += (size_t)sprintf(out + o, "\\x%02x", k[i]);
    }
    if (len > n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

/* ---- the log ------------------------------------------------------------------ */

/* waldump and the log pass of verify read DIR/wal themselves, with the
 * engine's reader (wal.h) and decoders (pageop.h), so they work on a
 * database the engine will not open and never write anything. */

/* Read exactly LEN bytes at OFF.  Returns 0, or -1 with errno (0 = EOF). */
static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = 0;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

static const char *sync_mode_name(int mode)
{
    switch (mode) {
    case ENG_SYNC_COMMIT: return "commit";
    case ENG_SYNC_GROUP: return "group";
    case ENG_SYNC_OFF: return "off";
    default: return "unknown";
    }
}

/* printf to F, or nothing when F is NULL (verify decodes without printing). */
static void outf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(FILE *f, const char *fmt, ...)
{
    if (f == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
}

/* A key as one space-free token: bytes outside '!'..'~' and the backslash
 * as \xNN, at most MAXSHOW bytes then "...".  OUT needs 4 * MAXSHOW + 4
 * bytes. */
static const char *escape_token(const uint8_t *k, size_t len, size_t maxshow, char *out)
{
    size_t o = 0, n = len < maxshow ? len : maxshow;
    for (size_t i = 0; i < n; i++) {
        if (k[i] > 0x20 && k[i] < 0x7f && k[i] != '\\')
            out[o++] = (char)k[i];
        else
            o += (size_t)sprintf(out + o, "\\x%02x", k[i]);
    }
    if (len > n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

static const char *rec_type_name(int type)
{
    switch (type) {
    case WAL_REC_BATCH: return "batch";
    case WAL_REC_PAGES: return "pages";
    case WAL_REC_CHECKPOINT: return "checkpoint";
    default: return NULL;
    }
}

/* WAL_REC_BATCH: "seq=S ops=N" and the first WALDUMP_OPS operations.
 * Returns NULL, or why the payload does not decode. */
static const char *describe_batch(FILE *f, const uint8_t *p, size_t len)
{
    uint32_t nops = 0;
    if (pa_batch_count(p, len, &nops))
        return "batch payload does not decode";
    pa_batch b = {0, 0, calloc(nops, sizeof(pa_op))};
    if (b.ops == NULL)
        return "out of memory decoding a batch";
    if (pa_batch_decode(p, len, &b)) {
        free(b.ops);
        return "batch payload does not decode";
    }
    outf(f, " seq=%" PRIu64 " ops=%" PRIu32, b.seq, b.nops);
    char shown[4 * SHOW_KEY_BYTES + 4];
    for (uint32_t i = 0; i < b.nops && i < WALDUMP_OPS; i++) {
        const pa_op *o = &b.ops[i];
        if (o->kind == BOP_PUT)
            outf(f, " put k=%s vlen=%" PRIu32, escape_token(o->key, o->klen, SHOW_KEY_BYTES, shown),
                 o->vlen);
        else
            outf(f, " del k=%s", escape_token(o->key, o->klen, SHOW_KEY_BYTES, shown));
    }
    if (b.nops > WALDUMP_OPS)
        outf(f, " ...(%" PRIu32 " more)", b.nops - WALDUMP_OPS);
    free(b.ops);
    return NULL;
}

/* One page action, fields per the encoding at the top of pageop.h.  Q is
 * the action past its common prefix (kind, block); pa_parse has checked
 * that every field read here lies inside the record. */
static void describe_action(FILE *f, int kind, uint32_t block, const uint8_t *q)
{
    switch (kind) {
    case PA_IMAGE:
        outf(f, " image(block=%" PRIu32 " hole=%u+%u codec=%s bytes=%" PRIu32 ")", block,
             (unsigned)rd16(q), (unsigned)rd16(q + 2), q[4] == 0 ? "raw" : q[4] == 1 ? "zstd" : "unknown",
             rd32(q + 5));
        break;
    case PA_INIT: {
        const char *t = q[0] <= PAGE_TYPE_MAX ? page_type_name(q[0]) : NULL;
        outf(f, " init(block=%" PRIu32 " type=%s level=%u next=%" PRIu32 " aux=%" PRIu32 ")", block,
             t ? t : "unknown", (unsigned)rd16(q + 1), rd32(q + 3), rd32(q + 7));
        break;
    }
    case PA_FREE:
        outf(f, " free(block=%" PRIu32 " next=%" PRIu32 ")", block, rd32(q));
        break;
    case PA_OVFL:
        outf(f, " ovfl(block=%" PRIu32 " next=%" PRIu32 " len=%" PRIu32 " src=%s)", block, rd32(q),
             rd32(q + 4), q[8] == 0 ? "bytes" : "op");
        break;
    case PA_INSERT:
        outf(f, " insert(block=%" PRIu32 " idx=%u src=%s)", block, (unsigned)rd16(q),
             q[3] == 0 ? "bytes" : "op");
        break;
    case PA_REMOVE:
        outf(f, " remove(block=%" PRIu32 " idx=%u)", block, (unsigned)rd16(q));
        break;
    case PA_SPLIT:
        outf(f, " split(block=%" PRIu32 " m=%u next=%" PRIu32 ")", block, (unsigned)rd16(q + 3),
             rd32(q + 5));
        break;
    case PA_META:
        outf(f, " meta(nblocks=%" PRIu32 " freelist=%" PRIu32 ")", rd32(q), rd32(q + 4));
        break;
    case PA_SETNEXT:
        outf(f, " setnext(block=%" PRIu32 " next=%" PRIu32 ")", block, rd32(q));
        break;
    case PA_PUSHFREE:
        outf(f, " pushfree(trunk=%" PRIu32 " freed=%" PRIu32 ")", block, rd32(q));
        break;
    case PA_POPFREE:
        outf(f, " popfree(trunk=%" PRIu32 ")", block);
        break;
    case PA_SETXMAX:
        outf(f, " setxmax(block=%" PRIu32 " idx=%u xid=%" PRIu64 ")", block, (unsigned)rd16(q), rd64(q + 2));
        break;
    case PA_FREEZE:
        outf(f, " freeze(block=%" PRIu32 " idx=%u)", block, (unsigned)rd16(q));
        break;
    case PA_CLOGSET:
        outf(f, " clogset(block=%" PRIu32 " entry=%" PRIu32 " status=%s)", block, rd32(q),
             q[4] == CLOG_COMMITTED ? "committed" : q[4] == CLOG_ABORTED ? "aborted" : "in-progress");
        break;
    case PA_CLOGDIR:
        outf(f, " clogdir(page=%" PRIu32 " block=%" PRIu32 ")", rd32(q), rd32(q + 4));
        break;
    case PA_HINTS:
        outf(f, " hints(block=%" PRIu32 " bytes=%u)", block, (unsigned)rd16(q));
        break;
    }
}

/* WAL_REC_PAGES: "batch=<lsn> op=I" and every action. */
static const char *describe_pages(FILE *f, const uint8_t *p, size_t len)
{
    if (len < PA_REC_HDR)
        return "page record shorter than its header";
    uint32_t op = rd32(p + 8);
    if (op == PA_OP_COMMIT) outf(f, " batch=0x%" PRIx64 " op=commit", rd64(p));
    else if (op == PA_OP_ABORT) outf(f, " batch=0x%" PRIx64 " op=abort", rd64(p));
    else if (op == PA_OP_MAINT) outf(f, " op=maint");
    else outf(f, " batch=0x%" PRIx64 " op=%" PRIu32, rd64(p), op);
    size_t off = PA_REC_HDR;
    if (off == len)
        return "page record without actions";
    while (off < len) {
        int kind = 0;
        uint32_t block = 0;
        size_t n = pa_parse(p + off, len - off, &kind, &block);
        if (n == 0)
            return "malformed page action";
        describe_action(f, kind, block, p + off + 5);
        if ((kind == PA_META || kind == PA_CLOGDIR) && block != 0)
            return "meta action names a block other than 0";
        off += n;
    }
    return NULL;
}

/* WAL_REC_CHECKPOINT: u64 redo | u64 last_seq | u64 nblocks. */
static const char *describe_checkpoint(FILE *f, const uint8_t *p, size_t len)
{
    if (len != 24)
        return "checkpoint record is not 24 bytes";
    outf(f, " redo=0x%" PRIx64 " last_seq=%" PRIu64 " nblocks=%" PRIu64, rd64(p), rd64(p + 8),
         rd64(p + 16));
    return NULL;
}

/* Report, as the reader does, a problem with the record at LSN. */
static void report_record(const eng_reporter *rep, uint64_t seg_size, uint64_t lsn,
                          uint64_t expected, uint64_t found, const char *fmt, const char *why)
{
    uint64_t seg = lsn & ~(seg_size - 1);
    char file[64];
    snprintf(file, sizeof file, "%s/%016" PRIx64, WAL_DIR, seg);
    eng_report(rep, ENG_LAYER_WAL, file, (int64_t)((lsn - seg) / WAL_BLOCK), (int64_t)(lsn - seg),
               -1, expected, found, fmt, (unsigned long long)lsn, why);
}

typedef struct log_walk {
    uint64_t records;   /* records read */
    uint64_t malformed; /* records that passed their checksum but do not decode */
    uint64_t end;       /* at the end: just past the last good record */
    int trimmed;        /* a torn tail after END was cut */
    int limited;        /* stopped by the limit, the next record at END */
} log_walk;

/* Read the log of DIR (segments of SEG_SIZE) from FROM with wal_reader,
 * decoding every record; with OUT, print one line per record.  Reports (a
 * damaged record in the synced part, a payload that does not decode) go
 * to REP.  LIMIT > 0 stops after that many records.  Returns ENG_OK at
 * the end of the log or the limit (W->malformed counts undecodable
 * records), ENG_CORRUPTION when the reader stopped at a damaged record,
 * or the status that stopped it. */
static int walk_log(io_ctx *io, const char *dir, uint64_t seg_size, uint64_t from, uint64_t limit,
                    FILE *out, const eng_reporter *rep, log_walk *w)
{
    memset(w, 0, sizeof *w);
    w->end = from;
    wal_reader *r = NULL;
    int st = wal_reader_open(io, dir, seg_size, from, 0, rep, &r);
    if (st != ENG_OK)
        return st;
    wal_record rec;
    while ((st = wal_reader_next(r, &rec)) == ENG_OK) {
        w->records++;
        w->end = rec.end;
        const char *name = rec_type_name(rec.type);
        outf(out, "lsn=0x%" PRIx64 " len=%zu type=", rec.lsn, rec.len + WAL_REC_HDR);
        if (name)
            outf(out, "%s", name);
        else
            outf(out, "unknown(%d)", rec.type);
        outf(out, " prev=0x%" PRIx64, rec.prev);
        const char *why = NULL;
        if (rec.type == WAL_REC_BATCH)
            why = describe_batch(out, rec.payload, rec.len);
        else if (rec.type == WAL_REC_PAGES)
            why = describe_pages(out, rec.payload, rec.len);
        else if (rec.type == WAL_REC_CHECKPOINT)
            why = describe_checkpoint(out, rec.payload, rec.len);
        if (why)
            outf(out, " MALFORMED: %s", why);
        outf(out, "\n");
        if (why) {
            w->malformed++;
            report_record(rep, seg_size, rec.lsn, 0, (uint64_t)rec.type,
                          "record at LSN 0x%llx passes its checksum but does not decode: %s", why);
        }
        if (limit && w->records >= limit) {
            w->limited = 1;
            break;
        }
    }
    if (st == ENG_NOTFOUND) {
        wal_reader_end(r, &w->end, NULL, NULL, &w->trimmed);
        st = ENG_OK;
    }
    wal_reader_close(r);
    return st;
}

/* Recovery needs a record at the redo point (the checkpoint's own, or the
 * first change after it): report its absence the way recovery does. */
static void report_no_redo_record(const eng_reporter *rep, uint64_t redo, uint64_t end)
{
    eng_report(rep, ENG_LAYER_WAL, WAL_DIR, -1, (int64_t)redo, -1, redo, end,
               "the log holds no record at the redo point (LSN %llu): the checkpoint's "
               "record is missing", (unsigned long long)redo);
}

/* The first record of the oldest segment of DIR/wal (segments of SEG_SIZE):
 * past the continuation (wb_cont) of a record begun in an older, removed
 * segment.  Returns 0 with *LSN, or -1 (no segment).  A block header that
 * does not check ends the search at the segment's first record position;
 * the reader then says what is wrong there. */
static int oldest_record(const char *dir, uint64_t seg_size, uint64_t *lsn)
{
    char waldir[4200];
    snprintf(waldir, sizeof waldir, "%s/%s", dir, WAL_DIR);
    DIR *d = opendir(waldir);
    if (d == NULL)
        return -1;
    uint64_t base = UINT64_MAX;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t v;
        if (strlen(e->d_name) == 16 && strspn(e->d_name, "0123456789abcdef") == 16 &&
            parse_lsn(e->d_name, &v) == 0 && (v & (seg_size - 1)) == 0 && v < base)
            base = v;
    }
    closedir(d);
    if (base == UINT64_MAX)
        return -1;
    *lsn = base + WAL_BLOCK_HDR;
    char path[4300];
    snprintf(path, sizeof path, "%s/%016" PRIx64, waldir, base);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    for (uint64_t b = 0; b < seg_size; b += WAL_BLOCK) {
        uint8_t h[WAL_BLOCK_HDR];
        if (pread_full(fd, h, sizeof h, b) != 0 || XXH3_64bits(h, WB_CHECKED) != rd64(h + WB_CHECK_OFF) ||
            rd16(h + WB_MAGIC_OFF) != WB_MAGIC || rd64(h + WB_LSN_OFF) != base + b)
            break;
        uint16_t cont = rd16(h + WB_CONT_OFF);
        if (cont < WAL_BLOCK_PAYLOAD) {
            /* cont record bytes, skipping sector trailers (wal.h) */
            *lsn = (wal_stream_advance(base + b + WAL_BLOCK_HDR, cont) + 7) & ~(uint64_t)7;
            break;
        }
    }
    close(fd);
    return 0;
}

/* Reports of a log read: counted, and the first one kept. */
typedef struct log_reports {
    uint64_t count;
    eng_corruption first;
} log_reports;

/* Print each report as it comes (waldump). */
static void print_log_report(void *ctx, const eng_corruption *r)
{
    log_reports *lr = ctx;
    if (lr->count++ == 0)
        lr->first = *r;
    print_report(stdout, r);
}

/* Only keep it (a report that is a note, not the result). */
static void keep_report(void *ctx, const eng_corruption *r)
{
    log_reports *lr = ctx;
    if (lr->count++ == 0)
        lr->first = *r;
}

static int cmd_waldump(const tool_args *a)
{
    int rc = require_dir(a->dir);
    if (rc)
        return rc;
    io_ctx *io = NULL;
    int st = io_ctx_create(ENG_IO_PSYNC, NULL, &io);
    if (st != ENG_OK) {
        fprintf(stderr, "engine-tool: waldump %s: %s\n", a->dir, eng_strerror(st));
        return EXIT_ERROR;
    }
    control c;
    memset(&c, 0, sizeof c);
    log_reports noted;
    memset(&noted, 0, sizeof noted);
    eng_reporter ctl_rep = {keep_report, &noted};
    uint64_t seg_size = 0, start = 0;
    int from_redo = 0, oldest = a->from_oldest;
    st = control_read(io, a->dir, &c, &ctl_rep);
    if (st == ENG_OK) {
        seg_size = c.seg_size;
        start = c.redo_lsn;
        from_redo = !(a->given & OPT_FROM);
    } else if (st == ENG_NOTFOUND || st == ENG_CORRUPTION) {
        if (st == ENG_NOTFOUND) {
            fprintf(stderr, "engine-tool: note: %s has no control file\n", a->dir);
        } else {
            char line[512];
            eng_corruption_format(&noted.first, line, sizeof line);
            fprintf(stderr, "engine-tool: note: %s: control file unreadable: %s\n", a->dir,
                    noted.count ? line : "corruption");
        }
        seg_size = wal_guess_seg_size(a->dir);
        if (seg_size == 0) {
            fprintf(stderr, "engine-tool: waldump %s: no WAL segments in %s/%s\n", a->dir, a->dir,
                    WAL_DIR);
            io_ctx_destroy(io);
            return EXIT_ERROR;
        }
        fprintf(stderr, "engine-tool: note: WAL segment size %" PRIu64
                " guessed from the segment files\n", seg_size);
        if (!(a->given & OPT_FROM))
            oldest = 1;
    } else {
        fprintf(stderr, "engine-tool: waldump %s: reading the control file: %s\n", a->dir,
                eng_strerror(st));
        io_ctx_destroy(io);
        return EXIT_ERROR;
    }
    if (oldest) {
        if (oldest_record(a->dir, seg_size, &start) != 0) {
            fprintf(stderr, "engine-tool: waldump %s: no WAL segments in %s/%s\n", a->dir, a->dir,
                    WAL_DIR);
            io_ctx_destroy(io);
            return EXIT_ERROR;
        }
        if (!a->from_oldest)
            fprintf(stderr, "engine-tool: note: starting at the oldest segment's first record, "
                    "lsn=0x%" PRIx64 "\n", start);
    } else if (a->given & OPT_FROM) {
        start = a->from;
    }

    log_reports shown;
    memset(&shown, 0, sizeof shown);
    eng_reporter rep = {print_log_report, &shown};
    log_walk w;
    st = walk_log(io, a->dir, seg_size, start, a->limit, stdout, &rep, &w);
    io_ctx_destroy(io);
    if (st == ENG_OK && w.limited) {
        printf("stopped after %" PRIu64 " records (--limit); next lsn=0x%" PRIx64 "\n", w.records,
               w.end);
    } else if (st == ENG_OK) {
        if (from_redo && w.records == 0)
            report_no_redo_record(&rep, start, w.end);
        printf("end of log at lsn=0x%" PRIx64 "%s\n", w.end, w.trimmed ? " (torn tail trimmed)" : "");
    } else if (st != ENG_CORRUPTION) {
        fprintf(stderr, "engine-tool: waldump %s: reading the log after %" PRIu64 " records: %s\n",
                a->dir, w.records, eng_strerror(st));
        return EXIT_ERROR;
    }
    if (st == ENG_CORRUPTION && shown.count == 0)
        printf("corruption: (no report recorded)\n");
    if (st == ENG_CORRUPTION && w.records == 0 && (a->given & OPT_FROM) && !a->from_oldest)
        fprintf(stderr, "engine-tool: note: is --from %s the LSN of a record?  The first record "
                "did not read\n", a->from_str);
    return (st == ENG_CORRUPTION || shown.count) ? EXIT_PROBLEM : EXIT_OK;
}

/* ---- verify ------------------------------------------------------------------ */

typedef struct verify_ctx {
    pthread_mutex_t mu;
    uint64_t seen;
} verify_ctx;

static void verify_report(void *ctx, const eng_corruption *r)
{
    verify_ctx *v = ctx;
    char line[512];
    eng_corruption_format(r, line, sizeof line);
    pthread_mutex_lock(&v->mu);
    v->seen++;
    printf("%s\n", line);
    pthread_mutex_unlock(&v->mu);
}

/* The pages verify could not check, and what it skipped because of them:
 * "unchecked: blocks=5,9 skipped=leaf-links,unreachable-blocks" (none: no
 * line).  Their own damage is among the corruption lines above. */
static void print_unchecked(const eng_verify_info *info)
{
    if (!info->unchecked && !info->tree_skipped)
        return;
    printf("unchecked: blocks=");
    uint64_t shown = info->unchecked < ENG_VERIFY_UNCHECKED_LIST ? info->unchecked : ENG_VERIFY_UNCHECKED_LIST;
    for (uint64_t i = 0; i < shown; i++)
        printf("%s%" PRIu64, i ? "," : "", info->unchecked_blocks[i]);
    if (!shown)
        printf("none");
    if (info->unchecked > shown)
        printf(",... (%" PRIu64 " in all)", info->unchecked);
    printf(" skipped=%s%s\n",
           info->tree_skipped ? "tree" : "leaf-links-across-them",
           info->leaks_skipped ? ",unreachable-blocks" : "");
}

static int cmd_verify(const tool_args *a)
{
    int rc = require_dir(a->dir);
    if (rc)
        return rc;
    eng_options o;
    base_options(a, &o, TOOL_READ);
    o.on_corruption = NULL;     /* FN gets every report; once is enough */
    verify_ctx v = {PTHREAD_MUTEX_INITIALIZER, 0};
    eng_verify_info info;
    /* Pages, then every log record from the redo point (the engine's
     * verify walks the log as recovery and waldump read it). */
    int st = eng_verify_dir_ex(a->dir, &o, verify_report, &v, &info);
    uint64_t problems = info.problems;
    if (problems < v.seen)
        problems = v.seen;
    print_unchecked(&info);
    if (st != ENG_OK && st != ENG_CORRUPTION) {
        fprintf(stderr, "engine-tool: verify %s: %s\n", a->dir, eng_strerror(st));
        if (problems)
            printf("verify: %" PRIu64 " problems (incomplete)\n", problems);
        return EXIT_ERROR;
    }
    printf("verify: %" PRIu64 " problems\n", problems);
    return (st == ENG_CORRUPTION || problems) ? EXIT_PROBLEM : EXIT_OK;
}

/* ---- stat ---------------------------------------------------------------------- */

static int cmd_stat(const tool_args *a)
{
    eng_db *db;
    int rc = tool_open(a, TOOL_READ, stderr, &db);
    if (rc)
        return rc;
    eng_stats s;
    memset(&s, 0, sizeof s);
    int st = eng_get_stats(db, &s);
    if (st != ENG_OK) {
        explain_failure(stderr, "stat", a->dir, st, db);
        eng_close(db);
        return status_exit(st);
    }
    eng_recovery_info ri;
    memset(&ri, 0, sizeof ri);
    eng_get_recovery_info(db, &ri);
    printf("{\n");
    printf("  \"options\": {\n");
    printf("    \"page_size\": %" PRIu32 ",\n", s.page_size);
    printf("    \"data_checksums\": %s,\n", s.data_checksums ? "true" : "false");
    printf("    \"io_backend\": \"%s\",\n", s.io_backend == ENG_IO_PSYNC ? "psync" : "uring");
    printf("    \"cache_size\": %" PRIu64 ",\n", s.cache_size);
    printf("    \"cache_pages\": %" PRIu64 ",\n", s.cache_pages);
    printf("    \"sync_mode\": \"%s\",\n", sync_mode_name(s.sync_mode));
    printf("    \"full_page_writes\": %s,\n", s.full_page_writes ? "true" : "false");
    printf("    \"wal_compression\": \"%s\",\n",
           s.wal_compression == ENG_WAL_COMPRESSION_ZSTD ? "zstd" : "none");
    printf("    \"wal_segment_size\": %" PRIu64 "\n", s.wal_segment_size);
    printf("  },\n");
    printf("  \"sizes\": {\n");
    printf("    \"data_file_bytes\": %" PRIu64 ",\n", s.data_file_bytes);
    printf("    \"nblocks\": %" PRIu64 ",\n", s.nblocks);
    printf("    \"high_water_mark\": %" PRIu64 "\n", s.high_water_mark);
    printf("  },\n");
    printf("  \"counters\": {\n");
    printf("    \"page_reads\": %" PRIu64 ",\n", s.page_reads);
    printf("    \"page_writes\": %" PRIu64 ",\n", s.page_writes);
    printf("    \"cache_hits\": %" PRIu64 ",\n", s.cache_hits);
    printf("    \"cache_misses\": %" PRIu64 ",\n", s.cache_misses);
    printf("    \"evictions\": %" PRIu64 ",\n", s.evictions);
    printf("    \"syncs\": %" PRIu64 ",\n", s.syncs);
    printf("    \"puts\": %" PRIu64 ",\n", s.puts);
    printf("    \"deletes\": %" PRIu64 ",\n", s.deletes);
    printf("    \"gets\": %" PRIu64 ",\n", s.gets);
    printf("    \"batches\": %" PRIu64 ",\n", s.batches);
    printf("    \"overflow_pages_written\": %" PRIu64 ",\n", s.overflow_pages_written);
    printf("    \"txn_commits\": %" PRIu64 ",\n", s.txn_commits);
    printf("    \"txn_aborts\": %" PRIu64 ",\n", s.txn_aborts);
    printf("    \"hints_set\": %" PRIu64 ",\n", s.hints_set);
    printf("    \"hint_pages_written\": %" PRIu64 ",\n", s.hint_pages_written);
    printf("    \"hint_wal_records\": %" PRIu64 ",\n", s.hint_wal_records);
    printf("    \"versions_pruned\": %" PRIu64 ",\n", s.versions_pruned);
    printf("    \"corruption\": {");
    for (int l = 0; l < ENG_LAYER_COUNT; l++) {
        const char *name = eng_layer_name(l);
        printf("%s\n      \"%s\": %" PRIu64, l ? "," : "", name ? name : "unknown", s.corruption[l]);
    }
    printf("\n    }\n");
    printf("  },\n");
    printf("  \"wal\": {\n");
    printf("    \"bytes\": %" PRIu64 ",\n", s.wal_bytes);
    printf("    \"written_bytes\": %" PRIu64 ",\n", s.wal_written_bytes);
    printf("    \"records\": %" PRIu64 ",\n", s.wal_records);
    printf("    \"syncs\": %" PRIu64 ",\n", s.wal_syncs);
    printf("    \"insert_lsn\": %" PRIu64 ",\n", s.wal_insert_lsn);
    printf("    \"durable_lsn\": %" PRIu64 ",\n", s.wal_durable_lsn);
    printf("    \"last_seq\": %" PRIu64 ",\n", s.last_seq);
    printf("    \"durable_seq\": %" PRIu64 ",\n", s.durable_seq);
    printf("    \"checkpoints\": %" PRIu64 ",\n", s.checkpoints);
    printf("    \"segments_removed\": %" PRIu64 ",\n", s.segments_removed);
    printf("    \"segments_recycled\": %" PRIu64 "\n", s.segments_recycled);
    printf("  },\n");
    printf("  \"images\": {\n");
    printf("    \"count\": %" PRIu64 ",\n", s.images);
    printf("    \"bytes\": %" PRIu64 ",\n", s.image_bytes);
    printf("    \"raw_bytes\": %" PRIu64 "\n", s.image_raw_bytes);
    printf("  },\n");
    printf("  \"archive\": {\n");
    printf("    \"bytes\": %" PRIu64 ",\n", s.archive_bytes);
    printf("    \"segments\": %" PRIu64 "\n", s.segments_archived);
    printf("  },\n");
    printf("  \"recovery\": {\n");
    printf("    \"redo_lsn\": %" PRIu64 ",\n", ri.redo_lsn);
    printf("    \"end_lsn\": %" PRIu64 ",\n", ri.end_lsn);
    printf("    \"recovered_lsn\": %" PRIu64 ",\n", ri.recovered_lsn);
    printf("    \"recovered_seq\": %" PRIu64 ",\n", ri.recovered_seq);
    printf("    \"records\": %" PRIu64 ",\n", ri.records);
    printf("    \"actions_applied\": %" PRIu64 ",\n", ri.actions_applied);
    printf("    \"actions_skipped\": %" PRIu64 ",\n", ri.actions_skipped);
    printf("    \"images_restored\": %" PRIu64 ",\n", ri.images_restored);
    printf("    \"batch_ops_completed\": %" PRIu32 ",\n", ri.batch_ops_completed);
    printf("    \"trimmed\": %s\n", ri.trimmed ? "true" : "false");
    printf("  }\n");
    printf("}\n");
    st = eng_close(db);
    if (st != ENG_OK) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        return status_exit(st);
    }
    return EXIT_OK;
}

/* ---- dump-page ---------------------------------------------------------------- */

/* Page size of a data file the engine would not open: the size at which
 * block 0 is a meta page with a matching checksum, else (checksums off)
 * the size at which block 1 claims to be block 1.  0 if neither. */
static uint32_t guess_page_size(int fd, uint64_t fsize)
{
    static const uint32_t sizes[] = {4096, 8192, 16384};
    uint8_t *p = malloc(16384);
    uint32_t found = 0;
    if (p == NULL)
        return 0;
    for (size_t i = 0; i < 3 && !found; i++) {
        uint32_t ps = sizes[i];
        if (fsize < ps || pread_full(fd, p, ps, 0))
            continue;
        if (ph_get_type(p) == PAGE_META && ph_get_checksum(p) != 0 &&
            page_checksum(p, ps, 0) == ph_get_checksum(p))
            found = ps;
    }
    for (size_t i = 0; i < 3 && !found; i++) {
        uint32_t ps = sizes[i];
        if (fsize < 2ull * ps || fsize % ps || pread_full(fd, p, PAGE_HDR, ps))
            continue;
        if (ph_get_block(p) == 1 && ph_get_type(p) != PAGE_ZERO && ph_get_type(p) <= PAGE_TYPE_MAX)
            found = ps;
    }
    free(p);
    return found;
}

static const char *type_name(int type)
{
    const char *n = type <= PAGE_TYPE_MAX ? page_type_name(type) : NULL;
    return n ? n : "unknown";
}

static void dump_leaf_cells(const uint8_t *p)
{
    char shown[4 * SHOW_KEY_BYTES + 4];
    unsigned n = ph_get_nslots(p);
    printf("slots:\n");
    printf("  %5s %7s %6s %5s %9s %-16s %10s %10s %4s %s\n", "slot", "offset", "size", "klen", "vlen", "value",
           "xmin", "xmax", "hint", "key");
    for (unsigned i = 0; i < n; i++) {
        leaf_cell c;
        char where[32];
        page_leaf_cell(p, i, &c);
        if (c.cflags & CELL_OVERFLOW)
            snprintf(where, sizeof where, "overflow(%" PRIu32 ")", c.ovfl);
        else
            snprintf(where, sizeof where, "inline");
        printf("  %5u %7u %6u %5u %9" PRIu32 " %-16s %10" PRIu64 " %10" PRIu64 "  0x%x %s\n", i, page_slot(p, i), c.size,
               c.klen, c.vlen, where, c.xmin, c.xmax, page_hint(p, i), escape_key(c.key, c.klen, SHOW_KEY_BYTES, shown));
    }
}

static void dump_internal_cells(const uint8_t *p)
{
    char shown[4 * SHOW_KEY_BYTES + 4];
    unsigned n = ph_get_nslots(p);
    printf("slots:\n");
    printf("  %5s %7s %6s %5s %10s %s\n", "slot", "offset", "size", "klen", "child", "key");
    printf("  %5s %7s %6s %5s %10" PRIu32 " %s\n", "-", "-", "-", "-", ph_get_aux(p),
           "(leftmost: keys below slot 0)");
    for (unsigned i = 0; i < n; i++) {
        internal_cell c;
        page_internal_cell(p, i, &c);
        printf("  %5u %7u %6u %5u %10" PRIu32 " %s\n", i, page_slot(p, i), c.size, c.klen,
               c.child, escape_key(c.key, c.klen, SHOW_KEY_BYTES, shown));
    }
}

/* Print the page at BLOCK; returns EXIT_OK if it verifies, EXIT_PROBLEM if
 * not.  Only headers and fixed-offset fields are read from an unchecked
 * page; cells are decoded only after page_check_structure passed. */
static int dump_page(const uint8_t *p, uint32_t ps, uint64_t block, uint64_t hwm,
                     int checksums)
{
    uint64_t stored = ph_get_checksum(p);
    uint64_t computed = page_checksum(p, ps, block);
    int type = ph_get_type(p);

    if (!checksums && stored == 0)
        printf("checksum: 0x0 (data checksums off; computed 0x%016" PRIx64 ")\n", computed);
    else
        printf("checksum: stored 0x%016" PRIx64 " computed 0x%016" PRIx64 " (%s)\n", stored,
               computed, stored == computed ? "match" : "MISMATCH");
    printf("lsn: %" PRIu64 "\n", ph_get_lsn(p));
    printf("block: %" PRIu32 "%s\n", ph_get_block(p),
           ph_get_block(p) == block ? "" : " (MISMATCH: read at another block)");
    printf("type: %s (%d)\n", type_name(type), type);
    printf("flags: 0x%02x\n", ph_get_flags(p));
    printf("nslots: %u\n", ph_get_nslots(p));
    printf("lower: %u\n", ph_get_lower(p));
    printf("upper: %u\n", ph_get_upper(p));
    printf("frag: %u\n", ph_get_frag(p));
    printf("level: %u\n", ph_get_level(p));
    printf("next: %" PRIu32 "\n", ph_get_next(p));
    printf("aux: %" PRIu32 "\n", ph_get_aux(p));

    int is_zero = 0;
    page_problem pr;
    memset(&pr, 0, sizeof pr);
    int st = page_verify(p, ps, block, hwm, checksums, &is_zero, &pr);
    if (st == ENG_OK && is_zero)
        printf("verify: OK (all-zero page at or beyond the high-water mark: never written)\n");
    else if (st == ENG_OK)
        printf("verify: OK\n");
    else
        printf("verify: CORRUPT layer=%s entry=%" PRId32 " offset=%" PRId64 " expected=0x%" PRIx64
               " found=0x%" PRIx64 ": %s\n",
               eng_layer_name(pr.layer) ? eng_layer_name(pr.layer) : "unknown", pr.entry,
               pr.offset, pr.expected, pr.found, pr.detail);

    if (page_is_zero(p, ps))
        return st == ENG_OK ? EXIT_OK : EXIT_PROBLEM;

    if (type == PAGE_META) {
        meta_fields m;
        meta_read(p, &m);
        printf("meta:\n");
        printf("  magic: 0x%016" PRIx64 " (%s)\n", m.magic, m.magic == META_MAGIC ? "ok" : "BAD");
        printf("  root: %" PRIu32 "\n", m.root);
        printf("  nblocks: %" PRIu32 "\n", m.nblocks);
        printf("  freelist: %" PRIu32 "\n", m.freelist);
        printf("  height: %" PRIu32 "\n", m.height);
        printf("  clog_pages: %" PRIu32 "\n", m.clog_pages);
        for (uint32_t i = 0; i < m.clog_pages && i < META_CLOG_CAP(ps); i++)
            printf("  clog page %" PRIu32 ": block %" PRIu32 "\n", i, meta_clog_block(p, i));
    } else if (type == PAGE_CLOG) {
        /* Transaction ids i*per .. : counts per status and the last of each. */
        uint64_t per = CLOG_PER_PAGE(ps), first = (uint64_t)ph_get_aux(p) * per, n[4] = {0}, last[4] = {0};
        for (uint64_t j = 0; j < per; j++) {
            unsigned st = (p[PAGE_HDR + j / 4] >> ((j % 4) * 2)) & 3u;
            n[st]++;
            if (st) last[st] = first + j;
        }
        printf("clog: ids %" PRIu64 "..%" PRIu64 "\n", first, first + per - 1);
        printf("  committed: %" PRIu64 " (last %" PRIu64 ")\n", n[CLOG_COMMITTED], last[CLOG_COMMITTED]);
        printf("  aborted: %" PRIu64 " (last %" PRIu64 ")\n", n[CLOG_ABORTED], last[CLOG_ABORTED]);
        printf("  no status: %" PRIu64 "%s\n", n[0], n[3] ? " (and some entries hold status 3: DAMAGED)" : "");
    } else if (type == PAGE_OVERFLOW) {
        uint32_t len = ph_get_aux(p);
        printf("overflow:\n");
        printf("  payload: %" PRIu32 " bytes%s\n", len,
               len > ps - PAGE_HDR ? " (MORE than the page holds)" : "");
        printf("  next: %" PRIu32 "%s\n", ph_get_next(p), ph_get_next(p) ? "" : " (end of chain)");
    } else if (type == PAGE_FREE) {
        printf("free:\n  next free: %" PRIu32 "\n", ph_get_next(p));
    } else if (type == PAGE_LEAF || type == PAGE_INTERNAL) {
        page_problem sp;
        memset(&sp, 0, sizeof sp);
        if (page_check_structure(p, ps, &sp) != ENG_OK)
            printf("cells: not decoded, structure check failed: %s\n", sp.detail);
        else if (type == PAGE_LEAF)
            dump_leaf_cells(p);
        else
            dump_internal_cells(p);
    }
    return st == ENG_OK ? EXIT_OK : EXIT_PROBLEM;
}

static int cmd_dump_page(const tool_args *a)
{
    int rc = require_dir(a->dir);
    if (rc)
        return rc;

    char path[4096];
    if (snprintf(path, sizeof path, "%s/data", a->dir) >= (int)sizeof path) {
        fprintf(stderr, "engine-tool: dump-page: path too long\n");
        return EXIT_ERROR;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "engine-tool: dump-page: open %s: %s\n", path, strerror(errno));
        return EXIT_ERROR;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        fprintf(stderr, "engine-tool: dump-page: stat %s: %s\n", path, strerror(errno));
        close(fd);
        return EXIT_ERROR;
    }
    uint64_t fsize = (uint64_t)sb.st_size;

    /* Page size, checksum setting and high-water mark from the engine; if
     * it will not open the database (corrupt, busy), infer the page size
     * from the file and verify without the zero-page rule. */
    uint32_t ps = 0;
    uint64_t hwm = 0;
    int checksums = -1, hwm_known = 0;
    eng_options o;
    eng_db *db = NULL;
    base_options(a, &o, TOOL_READ);
    int st = eng_open(a->dir, &o, &db);
    eng_stats s;
    memset(&s, 0, sizeof s);
    if (st == ENG_OK && (st = eng_get_stats(db, &s)) == ENG_OK) {
        ps = s.page_size;
        hwm = s.high_water_mark;
        checksums = s.data_checksums;
        hwm_known = 1;
    }
    if (db)
        eng_close(db);
    if (a->given & OPT_PAGE_SIZE) {
        if (ps && ps != a->page_size)
            fprintf(stderr, "engine-tool: note: the database says page size %" PRIu32
                    ", decoding with --page-size %" PRIu32 "\n", ps, a->page_size);
        ps = a->page_size;
    } else if (st != ENG_OK) {
        ps = guess_page_size(fd, fsize);
        fprintf(stderr, "engine-tool: open %s: %s; ", a->dir, eng_strerror(st));
        if (!ps) {
            fprintf(stderr, "cannot tell the page size: pass --page-size\n");
            close(fd);
            return EXIT_ERROR;
        }
        fprintf(stderr, "page size %" PRIu32 " inferred from the data file, "
                "high-water mark unknown\n", ps);
    }
    if (ps < 4096 || ps > 16384 || (ps & (ps - 1))) {
        fprintf(stderr, "engine-tool: dump-page: implausible page size %" PRIu32 "\n", ps);
        close(fd);
        return EXIT_ERROR;
    }
    uint64_t nblocks = fsize / ps;
    if (a->block >= nblocks) {
        fprintf(stderr, "engine-tool: dump-page: block %" PRIu64 " is beyond the end of %s "
                "(%" PRIu64 " blocks of %" PRIu32 " bytes)\n", a->block, path, nblocks, ps);
        close(fd);
        return EXIT_ERROR;
    }
    uint8_t *p = malloc(ps);
    if (p == NULL) {
        fprintf(stderr, "engine-tool: dump-page: out of memory\n");
        close(fd);
        return EXIT_ERROR;
    }
    if (pread_full(fd, p, ps, a->block * ps)) {
        fprintf(stderr, "engine-tool: dump-page: read %s block %" PRIu64 ": %s\n", path, a->block,
                errno ? strerror(errno) : "short read");
        free(p);
        close(fd);
        return EXIT_ERROR;
    }
    close(fd);
    if (checksums < 0)
        checksums = ph_get_checksum(p) != 0;

    printf("page %" PRIu64 " of %s (page_size %" PRIu32 ", %" PRIu64 " blocks in file, "
           "high-water mark ", a->block, path, ps, nblocks);
    if (hwm_known)
        printf("%" PRIu64 ")\n", hwm);
    else
        printf("unknown: zero pages not judged)\n");
    rc = dump_page(p, ps, a->block, hwm, checksums);
    free(p);
    return rc;
}

/* ---- load ------------------------------------------------------------------------ */

static int cmd_load(const tool_args *a)
{
    uint64_t vsize = (a->given & OPT_VALUE_SIZE) ? a->value_size : DEFAULT_VALUE_SIZE;
    uint8_t *val = malloc(vsize ? vsize : 1);
    if (val == NULL) {
        fprintf(stderr, "engine-tool: load: out of memory\n");
        return EXIT_ERROR;
    }
    eng_db *db;
    int rc = tool_open(a, TOOL_CREATE, stderr, &db);
    if (rc) {
        free(val);
        return rc;
    }
    eng_stats s;
    if ((a->given & (OPT_PAGE_SIZE | OPT_NO_CHECKSUMS | OPT_WAL_SEGMENT_SIZE)) &&
        eng_get_stats(db, &s) == ENG_OK) {
        if ((a->given & OPT_PAGE_SIZE) && s.page_size != a->page_size)
            fprintf(stderr, "engine-tool: note: %s already has page size %" PRIu32
                    "; --page-size %" PRIu32 " ignored\n", a->dir, s.page_size, a->page_size);
        if ((a->given & OPT_NO_CHECKSUMS) && s.data_checksums)
            fprintf(stderr, "engine-tool: note: %s already has data checksums; "
                    "--no-data-checksums ignored\n", a->dir);
        if ((a->given & OPT_WAL_SEGMENT_SIZE) && s.wal_segment_size != a->wal_segment_size)
            fprintf(stderr, "engine-tool: note: %s already has WAL segments of %" PRIu64
                    " bytes; --wal-segment-size %" PRIu64 " ignored\n", a->dir,
                    s.wal_segment_size, a->wal_segment_size);
    }
    for (uint64_t i = 0; i < a->keys; i++) {
        char key[KEY_LEN + 8];
        key_for(i, key);
        value_for(i, a->seed, val, vsize);
        int st = eng_put(db, key, KEY_LEN, val, vsize, NULL);
        if (st != ENG_OK) {
            char what[64];
            snprintf(what, sizeof what, "put %s in", key);
            explain_failure(stderr, what, a->dir, st, db);
            eng_close(db);
            free(val);
            return status_exit(st);
        }
    }
    free(val);
    /* As the engine acknowledged them: under --sync off the durable
     * sequence may trail; the closing checkpoint then makes all durable. */
    uint64_t last_seq = eng_last_seq(db), durable_seq = eng_durable_seq(db);
    int st = eng_close(db);
    if (st != ENG_OK) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        return status_exit(st);
    }
    printf("loaded %" PRIu64 " keys, last_seq=%" PRIu64 " durable_seq=%" PRIu64 "\n", a->keys,
           last_seq, durable_seq);
    return EXIT_OK;
}

/* ---- check -------------------------------------------------------------------- */

typedef struct check_state {
    unsigned wrong, gaps, corrupt, extra;
    eng_corruption last;        /* last report printed, to print each once */
} check_state;

/* A read of WHAT failed on corruption: print the report, unless it is the
 * one just printed (every key of a corrupt leaf reports the same page). */
static void check_corruption(eng_db *db, const char *what, check_state *cs)
{
    eng_corruption r;
    memset(&r, 0, sizeof r);
    int have = eng_last_corruption(db, &r);
    if (cs->corrupt++ > 0 && have && r.layer == cs->last.layer && r.block == cs->last.block &&
        strcmp(r.file, cs->last.file) == 0 && strcmp(r.detail, cs->last.detail) == 0)
        return;
    if (cs->corrupt > 100 * MAX_REPORTED)
        return;
    printf("unreadable: key=%s\n", what);
    if (have) {
        print_report(stdout, &r);
        cs->last = r;
    } else {
        printf("corruption: (no report recorded)\n");
    }
}

/* Keys at or above index N with the "k" prefix must not exist. */
static int check_no_extra(eng_db *db, const char *dir, uint64_t n, check_state *cs)
{
    char lower[KEY_LEN + 8], kbuf[4 * SHOW_KEY_BYTES + 4];
    key_for(n, lower);
    eng_iter_options io = {lower, strlen(lower), "l", 1, NULL};
    eng_iter *it = NULL;
    int st = eng_iter_open(db, &io, &it);
    if (st == ENG_OK) {
        for (st = eng_iter_first(it); st == ENG_OK; st = eng_iter_next(it)) {
            size_t kl;
            const void *k = eng_iter_key(it, &kl);
            if (cs->extra++ < MAX_REPORTED)
                printf("extra key: key=%s (only %" PRIu64 " keys were loaded)\n",
                       escape_key(k, kl, SHOW_KEY_BYTES, kbuf), n);
        }
        eng_iter_close(it);
    }
    if (st == ENG_NOTFOUND || st == ENG_OK)
        return 0;
    if (st == ENG_CORRUPTION) {
        check_corruption(db, "keys beyond the loaded range", cs);
        return 0;
    }
    fprintf(stderr, "engine-tool: check %s: scanning for extra keys: %s\n", dir, eng_strerror(st));
    return EXIT_ERROR;
}

static int cmd_check(const tool_args *a)
{
    uint64_t vsize = (a->given & OPT_VALUE_SIZE) ? a->value_size : DEFAULT_VALUE_SIZE;
    uint8_t *want = malloc(vsize ? vsize : 1);
    if (want == NULL) {
        fprintf(stderr, "engine-tool: check: out of memory\n");
        return EXIT_ERROR;
    }
    eng_db *db;
    int rc = tool_open(a, TOOL_READ, stdout, &db);
    if (rc) {
        free(want);
        return rc;
    }

    check_state cs;
    memset(&cs, 0, sizeof cs);
    eng_buf got = {NULL, 0, 0};
    uint64_t leading = 0, present = 0;
    int64_t first_missing = -1;
    int leading_done = 0;
    for (uint64_t i = 0; i < a->keys && rc == 0; i++) {
        char key[KEY_LEN + 8];
        key_for(i, key);
        int st = eng_get(db, key, KEY_LEN, &got);
        if (st == ENG_NOTFOUND) {
            if (first_missing < 0)
                first_missing = (int64_t)i;
            continue;
        }
        if (st == ENG_CORRUPTION) {
            /* Unreadable: ends the leading run, but is no evidence of a gap. */
            check_corruption(db, key, &cs);
            leading_done = 1;
            continue;
        }
        if (st != ENG_OK) {
            fprintf(stderr, "engine-tool: check %s: get %s: %s\n", a->dir, key, eng_strerror(st));
            rc = EXIT_ERROR;
            break;
        }
        present++;
        if (first_missing >= 0) {
            if (cs.gaps++ < MAX_REPORTED)
                printf("gap: key=k%015" PRId64 " is missing but key=%s is present\n",
                       first_missing, key);
        } else if (!leading_done) {
            leading = i + 1;
        }
        value_for(i, a->seed, want, vsize);
        if (got.len != vsize) {
            if (cs.wrong++ < MAX_REPORTED)
                printf("wrong value: key=%s length %zu, expected %" PRIu64 "\n", key, got.len, vsize);
        } else if (vsize && memcmp(got.data, want, vsize) != 0) {
            size_t d = 0;
            while (((const uint8_t *)got.data)[d] == want[d])
                d++;
            if (cs.wrong++ < MAX_REPORTED)
                printf("wrong value: key=%s differs from the expected value at byte %zu\n", key, d);
        }
    }
    eng_buf_free(&got);
    free(want);
    if (rc == 0)
        rc = check_no_extra(db, a->dir, a->keys, &cs);

    int st = eng_close(db);
    if (st != ENG_OK && rc == 0) {
        explain_failure(stdout, "close", a->dir, st, NULL);
        rc = status_exit(st);
    }
    printf("present=%" PRIu64 "\n", leading);
    if (rc)
        return rc;
    if (cs.wrong || cs.gaps || cs.corrupt || cs.extra) {
        printf("check: FAILED: %" PRIu64 " of %" PRIu64 " keys present, %u wrong values, "
               "%u gaps, %u corrupt reads, %u extra keys\n",
               present, a->keys, cs.wrong, cs.gaps, cs.corrupt, cs.extra);
        return EXIT_PROBLEM;
    }
    return EXIT_OK;
}

/* ---- get -------------------------------------------------------------------------- */

static int cmd_get(const tool_args *a)
{
    eng_db *db;
    int rc = tool_open(a, TOOL_READ, stderr, &db);
    if (rc)
        return rc;
    eng_buf v = {NULL, 0, 0};
    int st = eng_get(db, a->arg2, strlen(a->arg2), &v);
    if (st == ENG_OK) {
        if (v.len && fwrite(v.data, 1, v.len, stdout) != v.len)
            rc = EXIT_ERROR;
    } else if (st == ENG_NOTFOUND) {
        fprintf(stderr, "not found\n");
        rc = EXIT_PROBLEM;
    } else {
        explain_failure(stderr, "get", a->dir, st, db);
        rc = status_exit(st);
    }
    eng_buf_free(&v);
    st = eng_close(db);
    if (st != ENG_OK && rc == 0) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        rc = status_exit(st);
    }
    return rc;
}

/* ---- checkpoint ------------------------------------------------------------------ */

/* Open for writing, run OP, close; failures explained as NAME. */
static int run_on_db(const tool_args *a, const char *name, int (*op)(eng_db *db, void *ctx), void *ctx)
{
    eng_db *db;
    int rc = tool_open(a, TOOL_WRITE, stderr, &db);
    if (rc)
        return rc;
    int st = op(db, ctx);
    if (st != ENG_OK) {
        explain_failure(stderr, name, a->dir, st, db);
        eng_close(db);
        return status_exit(st);
    }
    st = eng_close(db);
    if (st != ENG_OK) {
        explain_failure(stderr, "close", a->dir, st, NULL);
        return status_exit(st);
    }
    return EXIT_OK;
}

static int op_checkpoint(eng_db *db, void *ctx)
{
    (void)ctx;
    return eng_checkpoint(db);
}

static int cmd_checkpoint(const tool_args *a)
{
    int rc = run_on_db(a, "checkpoint", op_checkpoint, NULL);
    if (rc == EXIT_OK)
        printf("checkpoint done\n");
    return rc;
}

/* ---- vacuum ---------------------------------------------------------------------- */

static int op_vacuum(eng_db *db, void *ctx)
{
    int st = eng_vacuum(db, ctx);
    return st == ENG_OK ? eng_checkpoint(db) : st;
}

/* Vacuum and checkpoint, then print what it did as one line of counts. */
static int cmd_vacuum(const tool_args *a)
{
    eng_vacuum_stats vs;
    int rc = run_on_db(a, "vacuum", op_vacuum, &vs);
    if (rc == EXIT_OK)
        printf("vacuum done: leaves=%" PRIu64 " versions=%" PRIu64 " removed=%" PRIu64 " frozen=%" PRIu64
               " hinted=%" PRIu64 " overflow_pages_freed=%" PRIu64 " horizon=%" PRIu64 "\n",
               vs.leaves, vs.versions, vs.removed, vs.frozen, vs.hinted, vs.overflow_pages_freed, vs.horizon);
    return rc;
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "engine-tool: missing command\n");
        usage(stderr);
        return EXIT_ERROR;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    const struct tool_cmd *cmd = NULL;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            cmd = &commands[i];
    if (cmd == NULL)
        return usage_error("unknown command '%s'", argv[1]);

    tool_args a;
    memset(&a, 0, sizeof a);
    a.value_size = DEFAULT_VALUE_SIZE;
    a.data_checksums = 1;
    int help = 0;
    int rc = parse_args(cmd, argc, argv, &a, &help);
    if (rc)
        return rc;
    if (help) {
        usage(stdout);
        return EXIT_OK;
    }

    rc = cmd->run(&a);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "engine-tool: writing output: %s\n", strerror(errno));
        rc = EXIT_ERROR;
    }
    return rc;
}
