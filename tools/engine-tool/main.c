/*
 * main.c -- engine-tool: the command-line window onto a database directory;
 * its arguments and main (the commands: db.c, load.c, waldump.c,
 * dump_page.c; what they share: tool.h).
 *
 * What it is for: looking at a database from the outside, the way an
 * operator (or a test script, or the stress driver's triage) would:
 *
 *   verify DIR              every page checked; one "corruption:" line per
 *                           problem, an "unchecked:" line naming the pages
 *                           that could not be checked (if any), a summary
 *                           (blocks scanned, bad checksums, other problems,
 *                           WAL records checked), then "verify: N problems"
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
 * the files itself, through the engine's own decoders and readers of
 * engine/inspect.h (the page decoders for dump-page; the control file, the
 * WAL reader recovery uses and the record decoders for waldump), with the
 * layouts of engine/format.h.  Those never write anything.  From engine/
 * it includes engine.h, format.h and inspect.h, nothing else.
 *
 * verify, check, stat, get, dump-page and waldump never write to the
 * directory: they open it read-only (engine.h, read_only: a shared lock on
 * LOCK when it can be read, none when it cannot), so they work on a
 * read-only mount or without write permission.
 *
 * Exit codes (other tools read them; keep them stable):
 *   0  success / clean / found
 *   1  the database is corrupt, a check failed, or (get) the key is absent
 *   2  usage error, I/O error, busy or invalid database (stat: also a
 *      database it cannot open, damaged control file included); for usage errors
 *      nothing at all was written (every argument is parsed and validated
 *      before anything is opened or created)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/version.h"
#include "engine.h"
#include "format.h"
#include "tool.h"

/* ---- arguments ------------------------------------------------------------ */

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
    {"--json", OPT_JSON, 0},
};

static const struct tool_cmd {
    const char *name;
    int npos;          /* positional arguments, DIR included */
    unsigned allowed;  /* options it takes */
    unsigned required; /* options it must have */
    int (*run)(const tool_args *a);
    const char *synopsis;
} commands[] = {
    {"verify", 1, OPT_OPEN_TIME | OPT_JSON, 0, cmd_verify, "verify DIR [--json]"},
    {"stat", 1, OPT_OPEN_TIME, 0, cmd_stat, "stat DIR"},
    {"dump-page", 2, OPT_PAGE_SIZE | OPT_JSON, 0, cmd_dump_page, "dump-page DIR BLOCK [--page-size B] [--json]"},
    {"load", 1, OPT_KEYS | OPT_VALUE_SIZE | OPT_SEED | OPT_PAGE_SIZE | OPT_NO_CHECKSUMS | OPT_OPEN_TIME | OPT_LOG,
     OPT_KEYS, cmd_load,
     "load DIR --keys N [--value-size B] [--seed S] [--page-size 4096|8192|16384]\n"
     "                   [--no-data-checksums] [--cache-size BYTES] [--io-backend uring|psync]\n"
     "                   [--sync commit|group|off] [--full-page-writes on|off]\n"
     "                   [--wal-compression none|zstd] [--wal-segment-size BYTES]\n"
     "                   [--archive-dir DIR] [--checkpoint-wal-bytes N]"},
    {"check", 1, OPT_KEYS | OPT_VALUE_SIZE | OPT_SEED | OPT_OPEN_TIME | OPT_SYNC | OPT_JSON, OPT_KEYS, cmd_check,
     "check DIR --keys N [--value-size B] [--seed S] [--sync commit|group|off] [--json]"},
    {"get", 2, OPT_OPEN_TIME, 0, cmd_get, "get DIR KEY"},
    {"checkpoint", 1, OPT_OPEN_TIME | OPT_ARCHIVE_DIR, 0, cmd_checkpoint, "checkpoint DIR [--archive-dir DIR]"},
    {"waldump", 1, OPT_FROM | OPT_LIMIT | OPT_WAL_SEGMENT_SIZE | OPT_JSON, 0, cmd_waldump,
     "waldump DIR [--from LSN|oldest] [--limit N] [--wal-segment-size BYTES] [--json]"},
    {"vacuum", 1, OPT_OPEN_TIME | OPT_ARCHIVE_DIR, 0, cmd_vacuum, "vacuum DIR [--archive-dir DIR]"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: engine-tool COMMAND ARGS...  (or engine-tool --version)\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(f, "  engine-tool %s\n", commands[i].synopsis);
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
            "point; a damaged record in the synced part of the log is a problem.  It\n"
            "ends with a pg_checksums-style summary (blocks scanned, bad checksums,\n"
            "other problems, WAL records checked, pages it could not check); when it\n"
            "could check nothing (busy, not found, unreadable) it prints the cause on\n"
            "one line and no summary.  A data file shorter than control's high-water\n"
            "mark is one report (\"the data file is shorter than control says\").\n"
            "\n"
            "Read-only commands: verify, check, stat, get, dump-page and waldump write\n"
            "nothing in DIR (no LOCK created, no log replayed to disk: a log to replay\n"
            "is replayed in memory) and work on a read-only mount or without write\n"
            "permission.  verify, check, stat, get and dump-page take a shared lock\n"
            "on DIR/LOCK when they can open it for reading (a writer holding it makes\n"
            "them exit 2, busy; while they hold it a writer is busy), and no lock at\n"
            "all when they cannot (no LOCK, or not readable): then a writer is not\n"
            "kept out.  dump-page still decodes the raw block when the database is\n"
            "busy; waldump never locks.  load, checkpoint and vacuum lock DIR\n"
            "exclusively.\n"
            "\n"
            "--json (verify, check, waldump, dump-page): one JSON document on stdout\n"
            "instead of the lines (docs/formats.md); the exit status is the same.\n"
            "LSNs are hexadecimal everywhere (\"0x...\" strings in JSON).\n"
            "\n"
            "waldump reads the log itself (no engine open, nothing written), from\n"
            "the control file's redo point or --from (a record's LSN, in hex as\n"
            "printed, 0x optional; \"oldest\" = first record of the oldest segment),\n"
            "one line per record:\n"
            "  lsn=0x.. len=N type=batch|pages|checkpoint prev=0x.. SUMMARY\n"
            "(len counts the 32-byte record header), then \"end of log at lsn=0x..\"\n"
            "with \"(torn tail trimmed)\" if invalid bytes after the end were cut.  A\n"
            "damaged record in the synced part prints a \"corruption:\" line, exit 1.\n"
            "Without a readable control file the segment size comes from the\n"
            "segment files (the step between their names); from one segment alone it\n"
            "cannot be told, which waldump says (--wal-segment-size gives it).\n"
            "\n"
            "exit status: 0 ok, 1 corruption / check failed / key not found,\n"
            "             2 usage, I/O, busy or invalid database\n",
            DEFAULT_VALUE_SIZE);
}

static int usage_error(const char *fmt, const char *what) {
    fprintf(stderr, "engine-tool: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nTry 'engine-tool --help'.\n");
    return EXIT_ERROR;
}

/* Parse a decimal unsigned number: digits only (no sign, no space, no
 * suffix), no overflow, at most MAX.  Returns 0 on success. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
    if (s == NULL || s[0] < '0' || s[0] > '9') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v > max) return -1;
    *out = v;
    return 0;
}

/* Parse an LSN: hexadecimal digits, "0x" optional (waldump prints LSNs in
 * hex), no overflow.  Returns 0 on success. */
static int parse_lsn(const char *s, uint64_t *out) {
    if (s == NULL) return -1;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
    if (s[0] == '\0' || strspn(s, "0123456789abcdefABCDEF") != strlen(s) || strlen(s) > 16) return -1;
    *out = strtoull(s, NULL, 16);
    return 0;
}

/* Store the value of option DEF.  Returns 0, or EXIT_ERROR after a message. */
static int set_option(tool_args *a, const struct tool_opt_def *def, const char *v) {
    uint64_t n = 0;
    switch (def->bit) {
    case OPT_KEYS:
        if (parse_u64(v, MAX_KEYS, &a->keys)) return usage_error("--keys: not a number of keys (0..10^15): '%s'", v);
        break;
    case OPT_VALUE_SIZE:
        if (parse_u64(v, ENG_MAX_VALUE, &a->value_size))
            return usage_error("--value-size: not a size in bytes (0..64 MiB): '%s'", v);
        break;
    case OPT_SEED:
        if (parse_u64(v, UINT64_MAX, &a->seed)) return usage_error("--seed: not an unsigned 64-bit number: '%s'", v);
        break;
    case OPT_PAGE_SIZE:
        if (parse_u64(v, UINT32_MAX, &n) || (n != 4096 && n != 8192 && n != 16384))
            return usage_error("--page-size: must be 4096, 8192 or 16384, not '%s'", v);
        a->page_size = (uint32_t)n;
        break;
    case OPT_NO_CHECKSUMS: a->data_checksums = 0; break;
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
                               "4294967296 bytes, not '%s'",
                               v);
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
            return usage_error("--from: not an LSN (hex, as waldump prints it) or 'oldest': '%s'", v);
        } else if ((a->from & 7) || (a->from % WAL_BLOCK != 0 && a->from % WAL_BLOCK < WAL_BLOCK_HDR)) {
            return usage_error("--from: %s cannot start a record (LSNs of records are 8-aligned "
                               "and never inside a block header)",
                               v);
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
static int parse_args(const struct tool_cmd *cmd, int argc, char **argv, tool_args *a, int *help) {
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
                if (strlen(opt_defs[k].name) == nlen && strncmp(opt_defs[k].name, s, nlen) == 0) def = &opt_defs[k];
            if (def == NULL || !(cmd->allowed & def->bit)) {
                fprintf(stderr,
                        "engine-tool: %s: unknown option '%.*s'\n"
                        "Try 'engine-tool --help'.\n",
                        cmd->name, (int)nlen, s);
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
            if (rc) return rc;
            continue;
        }
        if (npos >= cmd->npos) {
            fprintf(stderr,
                    "engine-tool: %s: unexpected argument '%s'\n"
                    "usage: engine-tool %s\n",
                    cmd->name, s, cmd->synopsis);
            return EXIT_ERROR;
        }
        pos[npos++] = s;
    }
    if (npos < cmd->npos) {
        fprintf(stderr, "engine-tool: %s: missing %s\nusage: engine-tool %s\n", cmd->name,
                npos == 0 ? "DIR" : (strcmp(cmd->name, "get") == 0 ? "KEY" : "BLOCK"), cmd->synopsis);
        return EXIT_ERROR;
    }
    unsigned missing = cmd->required & ~a->given;
    for (size_t k = 0; k < sizeof opt_defs / sizeof opt_defs[0]; k++)
        if (missing & opt_defs[k].bit) return usage_error("missing required option %s", opt_defs[k].name);

    a->dir = pos[0];
    a->arg2 = pos[1];
    if (a->dir[0] == '\0') return usage_error("%sDIR must not be empty", "");
    if (cmd->run == cmd_dump_page && parse_u64(a->arg2, UINT32_MAX, &a->block))
        return usage_error("dump-page: BLOCK must be a block number, not '%s'", a->arg2);
    if (cmd->run == cmd_get) {
        size_t kl = strlen(a->arg2);
        if (kl == 0 || kl > ENG_MAX_KEY) return usage_error("get: KEY must be 1..1024 bytes%s", "");
    }
    /* The cache must hold 16 pages.  Checked here when the page size is
     * known without opening anything: the explicit --page-size, or the
     * default when the database does not exist yet. */
    if (a->given & OPT_CACHE_SIZE) {
        char ctl[4096];
        uint64_t ps = 0;
        if (a->given & OPT_PAGE_SIZE)
            ps = a->page_size;
        else if (snprintf(ctl, sizeof ctl, "%s/control", a->dir) < (int)sizeof ctl && access(ctl, F_OK) != 0)
            ps = 8192;
        if (ps && a->cache_size < 16 * ps) {
            fprintf(stderr,
                    "engine-tool: --cache-size: %" PRIu64 " bytes is below the minimum "
                    "of 16 pages (%" PRIu64 " bytes)\n",
                    a->cache_size, 16 * ps);
            return EXIT_ERROR;
        }
    }
    return 0;
}

/* ---- main ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "engine-tool: missing command\n");
        usage(stderr);
        return EXIT_ERROR;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        version_print(stdout, "engine-tool");
        return EXIT_OK;
    }
    const struct tool_cmd *cmd = NULL;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) cmd = &commands[i];
    if (cmd == NULL) return usage_error("unknown command '%s'", argv[1]);

    tool_args a;
    memset(&a, 0, sizeof a);
    a.value_size = DEFAULT_VALUE_SIZE;
    a.data_checksums = 1;
    int help = 0;
    int rc = parse_args(cmd, argc, argv, &a, &help);
    if (rc) return rc;
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
