/*
 * promises.h -- what an engine promises under each fault, as data: one
 * table per adapter, read by the driver (which classes the door serves
 * another engine, how the oracle judges an undetected outcome), by the
 * adapter itself (SQLite's durable commit) and by crashtest (stress
 * --promises: which configurations it draws, which power losses tear).
 *
 * A row says, for a fault class (docs/fault-classes.md) and a file kind
 * (the kinds of --fault_files: data, wal, control, dir; or "any"), under
 * the options its WHEN names, what the engine's documentation (DOC, one
 * page per row) promises:
 *
 *   detect  the damage or failure comes back as an error, never as a
 *           wrong value (a failed call returns its error);
 *   repair  the engine comes back whole without a word: the call may
 *           return ok, but no wrong value, no lost or resurrected key,
 *           and for a crash an exact prefix of the history;
 *   none    nothing: what the engine does is counted apart
 *           (undetected_unpromised in its column), never failed.
 *
 * Crash rows (power_loss, kill) also say whether a commit the engine
 * acknowledged as synced survives (COMMIT_SURVIVES).  A row may name an
 * open finding (LEAD, a page of docs/findings/) that keeps crashtest's
 * draw away from its configuration while it stands.
 *
 * Invariants:
 *   PR1  the first row that matches (class, kind, the options) is the
 *        promise; a table ends with rows that match any options, so
 *        every class it names has an answer for every configuration;
 *   PR2  a class no row names is not judged through the door for that
 *        engine: stress refuses it;
 *   PR3  WHEN names options by their stress names and values as stress
 *        prints them ("name=v1|v2,name2=v"); a row whose WHEN names an
 *        option the engine's adapter does not read is a bug
 *        (st_promises_check).
 */
#ifndef STRESS_PROMISES_H
#define STRESS_PROMISES_H

#include <stddef.h>
#include <stdio.h>

#include "adapter.h"

enum st_promise_kind { ST_PROMISE_DETECT = 0, ST_PROMISE_REPAIR, ST_PROMISE_NONE };

typedef struct st_promise {
    const char *fault_class; /* report key, docs/fault-classes.md */
    const char *file_kind;   /* data, wal, control, dir, or any */
    const char *when;        /* "" (any options) or "name=v1|v2,name2=v" */
    int promise;             /* enum st_promise_kind */
    int commit_survives;     /* crash rows: 1 a synced commit survives, 0 not; -1 other rows */
    const char *doc;         /* the engine's documentation page */
    const char *says;        /* what it says there, in a line */
    const char *lead;        /* an open finding in docs/findings/, or NULL */
    int as_corruption;       /* 1: the engine reports this failure as corruption (an error all
                              * the same: SQLite's EIO on a read is SQLITE_CORRUPT) */
} st_promise;

typedef struct st_promises {
    const char *engine;         /* --engine's name */
    const st_promise *rows;     /* PR1: in the order they are asked */
    size_t count;               /* rows */
    const char *const *options; /* the options WHEN may name (PR3), NULL-terminated */
    const char *const *door;    /* the classes the door serves this engine (PR2), NULL-terminated;
                                  * NULL: the engine has hooks of its own (ours) */
} st_promises;

/* The tables (adapter_engine.c, adapter_rocksdb.c, adapter_sqlite.c). */
extern const st_promises st_promises_ours;
extern const st_promises st_promises_rocksdb;
extern const st_promises st_promises_sqlite;


/* An option's value as stress prints it ("wal", "2", "commit"), in BUF:
 * 0, or -1 for an option the rows may not name. */
typedef int (*st_option_value_fn)(const void *ctx, const char *name, char *buf, size_t cap);
/* st_option_value_fn over an st_open_options (CTX): sync_mode,
 * data_checksums, full_page_writes, block_protection_bytes_per_key,
 * sqlite_journal_mode, sqlite_synchronous, rocksdb_wal_recovery_mode. */
int st_open_options_value(const void *ctx, const char *name, char *buf, size_t cap);

/* PR1: the row of (CLS, KIND) under the options VALUE gives, or NULL
 * when no row names the pair.  A row of kind "any" matches every kind. */
const st_promise *st_promise_find(const st_promises *t, const char *cls, const char *kind, st_option_value_fn value,
                                  const void *ctx);
/* 1 if the table names CLS in any row. */
int st_promise_names(const st_promises *t, const char *cls);
/* 1 if the door serves CLS to this engine (PR2). */
int st_promise_door_serves(const st_promises *t, const char *cls);
/* "detect", "repair", "none". */
const char *st_promise_name(int promise);
/* One line naming row R (class, file kind, options, promise, page), for
 * a failure's report line. */
void st_promise_line(const st_promise *r, char *buf, size_t cap);

/* The table as JSON (stress --promises: its options' defaults from
 * DEFAULT_OF, NULL for none) or as a Markdown table (--promises_table,
 * docs/promises.md), with the engine's library VERSION (NULL: ours). */
void st_promises_json(const st_promises *t, const char *version, const char *(*default_of)(const char *name), FILE *f);
void st_promises_markdown(const st_promises *t, const char *version, FILE *f);

/* PR1, PR2, PR3: every row names a class KNOWN_CLASS knows (1: the
 * report keys of docs/fault-classes.md), a kind, a promise, a page and
 * options of the table's list; each class and kind ends with a row for
 * any options; every class the door serves has rows.  0, or -1 with the
 * first fault in WHY. */
int st_promises_check(const st_promises *t, int (*known_class)(const char *name), char *why, size_t cap);

/* ---- the driver's (promise_judge.c) ---- */
/* ENGINE's table (its st_engine). */
const st_promises *st_promises_of(const st_engine *engine);
struct st_driver;
/* The row that judges an injection of class CLS (enum vd_class) in FILE
 * (relative to the database directory; "" or NULL: none, a crash) under
 * the run's options: the crash classes by their "any" rows, the others
 * by the file's kind.  NULL: no row (judged by the usual rules). */
const st_promise *st_promise_judging(const struct st_driver *d, int cls, const char *file);
/* vd_config.promise_of: st_promise_judging's promise as the oracle's
 * (enum vd_promise), and its as_corruption in *AS_CORRUPTION; CTX is the
 * driver. */
int st_promise_of(void *ctx, int cls, const char *file, int *as_corruption);
/* 1 if a class this run injects (or the crash before it) has a row that
 * promises nothing, for some file kind: a wrong answer may be its, and
 * the verdict decides (V10), as it does for the other suspects. */
int st_promise_none_possible(const struct st_driver *d);

#endif
