/*
 * tool.h -- what the files of engine-tool share (main.c, db.c, load.c,
 * waldump.c, dump_page.c); see main.c for the commands and exit codes.
 */
#ifndef TOOLS_ENGINE_TOOL_TOOL_H
#define TOOLS_ENGINE_TOOL_TOOL_H

#include <stdint.h>
#include <stdio.h>

#include "common/json.h"
#include "common/keys.h"
#include "engine.h"

#define EXIT_OK      0
#define EXIT_PROBLEM 1
#define EXIT_ERROR   2

/* Keys are common/keys.h's (KEY_LEN bytes, key_format). */
#define MAX_KEYS           KEY_SPACE /* 10^15: indexes fit in 15 digits */
#define DEFAULT_VALUE_SIZE 100u
#define MAX_REPORTED       10           /* per kind of problem in check */
#define SHOW_KEY_BYTES     48           /* dump-page truncates longer keys */
#define WALDUMP_OPS        3            /* waldump shows this many ops of a batch */
#define MAX_WAL_SEG_SIZE   (1ull << 32) /* the engine's limit */
#define MIN_WAL_SEG_SIZE   (64ull << 10)

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
    OPT_JSON = 1u << 15,
};
#define OPT_OPEN_TIME (OPT_CACHE_SIZE | OPT_IO_BACKEND)
#define OPT_LOG                                                                                       \
    (OPT_SYNC | OPT_FULL_PAGE_WRITES | OPT_WAL_COMPRESSION | OPT_WAL_SEGMENT_SIZE | OPT_ARCHIVE_DIR | \
     OPT_CHECKPOINT_WAL_BYTES)

typedef struct tool_args {
    const char *dir;
    const char *arg2; /* dump-page: BLOCK; get: KEY */
    unsigned given;   /* enum tool_opt bits seen */
    uint64_t keys;
    uint64_t value_size;
    uint64_t seed;
    uint32_t page_size;
    int data_checksums;
    uint64_t cache_size;
    int io_backend;
    int sync_mode; /* eng_sync_mode */
    int full_page_writes;
    int wal_compression; /* eng_wal_compression */
    uint64_t wal_segment_size;
    const char *archive_dir;
    uint64_t checkpoint_wal_bytes;
    uint64_t from;        /* waldump: start LSN */
    const char *from_str; /* as given */
    int from_oldest;      /* waldump --from oldest */
    uint64_t limit;       /* waldump: records to show */
    uint64_t block;       /* dump-page, parsed from arg2 */
} tool_args;

/* How a command opens the database. */
enum tool_open_mode {
    TOOL_READ,   /* read-only; the database must exist */
    TOOL_WRITE,  /* read-write; the database must exist */
    TOOL_CREATE, /* read-write, created if missing */
};

/* ---- the commands ---- */
int cmd_verify(const tool_args *a); /* db.c */
int cmd_stat(const tool_args *a);
int cmd_get(const tool_args *a);
int cmd_checkpoint(const tool_args *a);
int cmd_vacuum(const tool_args *a);
int cmd_load(const tool_args *a); /* load.c */
int cmd_check(const tool_args *a);
int cmd_waldump(const tool_args *a);   /* waldump.c */
int cmd_dump_page(const tool_args *a); /* dump_page.c */

/* ---- db.c: reports and opening ---- */
void print_report(FILE *f, const eng_corruption *r);
/* ---- db.c: --json output ---- */
/* Report R as a JSON object: layer, file, block, offset, entry, expected
 * and found (hex strings), detail, and "text", the line print_report
 * prints. */
void print_report_json(FILE *f, const eng_corruption *r);
/* The lines of BUF (LEN bytes, as a memstream holds them) as a JSON array
 * of strings. */
void json_lines(FILE *f, const char *buf, size_t len);
/* Exit code for a failed engine call. */
int status_exit(int st);
/* Explain a failed call on DB (may be NULL after a failed open) to F. */
void explain_failure(FILE *f, const char *what, const char *dir, int st, eng_db *db);
/* Engine options for A, opened as MODE (enum tool_open_mode) says. */
void base_options(const tool_args *a, eng_options *o, int mode);
/* A database that is not being created must already be a directory: say
 * so plainly instead of whatever the engine makes of a missing path. */
int require_dir(const char *dir);
/* Open DIR as MODE says.  Returns 0 with *db set, or an exit code after
 * explaining the failure; reports go to REPORT_TO. */
int tool_open(const tool_args *a, int mode, FILE *report_to, eng_db **db);

/* ---- load.c: keys and values ---- */
/* The value load writes for key INDEX: LEN bytes of a splitmix64 stream
 * seeded by (INDEX, SEED).  Deterministic; check recomputes it. */
void value_for(uint64_t index, uint64_t seed, uint8_t *buf, size_t len);
/* A key as one printable, space-free token, the one form every command
 * prints keys in: '!'..'~' as is except the backslash, every other byte
 * (space, backslash, control bytes, >= 0x7f) as \xNN, so the token splits
 * on spaces and reads back unambiguously; at most MAXSHOW bytes, then
 * "...".  OUT needs 4 * MAXSHOW + 4 bytes. */
const char *escape_key(const uint8_t *k, size_t len, size_t maxshow, char *out);

#endif
