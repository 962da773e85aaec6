/*
 * verdict.h -- the oracle's judge: matches every injected fault (the
 * ledger's lines) with what the engine reported (corruption reports) and
 * what the driver saw (wrong values, lost keys, errors returned), and
 * gives each fault class of docs/fault-classes.md its outcome and failure
 * counts.
 *
 * Pure: it knows no engine and no fault library.  Ledger lines arrive as
 * raw JSON text (flat objects of string and integer fields, faults/ledger.h
 * says which), reports and observations as plain structs.  A second
 * engine's driver feeds it the same way.
 *
 * Rules (oracle/README.md explains them with examples, and for each the
 * engine bug it could hide and why it cannot):
 *   V0  what the power-loss step did (rollbacks, tears, undone creations
 *       and renames) and the dirty data a failed fsync dropped explain no
 *       report: the engine must recover from every such state.  Nor do
 *       the I/O error classes (they change no byte on disk) nor the
 *       crash classes themselves.  Only a tear with full_page_writes off
 *       (no image to rebuild the page) may explain a report at its own
 *       block: a power-loss tear, or a data write that failed once part
 *       of it was issued (the ledger's write/partial line).
 *   V1  a report matches an injection on the same file and place: a data
 *       file block equal; a WAL segment equal and WAL block (offset / 4096)
 *       within +-1.  One report may confirm several injections there.
 *   V1b a page that carries a valid checksum but old or misplaced contents
 *       (lost_write, misdirected_write, bitflip_cache written back when
 *       the per-KV codes have at most one byte, any page class with
 *       data_checksums off) is only noticed by checks
 *       that span pages (layers structure, overflow, version, page_header), which
 *       report the page they were inspecting, not the damaged one.  Such
 *       a report in the same file is explained by an earlier injection of
 *       those classes: no false alarm, but no detection credited either.
 *   V1c a cross-page report (structure, overflow) in a file where a page
 *       was reported damaged at an injection's place is a consequence of
 *       that damage (a sibling or parent check that met the bad page):
 *       explained, not credited.
 *   V1d a class with one detector by design (zero_page: the zero-page rule;
 *       with checksums on, bitflip_page, bitflip_inflight, torn_write and
 *       misdirected_write: the page checksum) is detected only by a report
 *       from that layer; another layer's report at its place is explained
 *       (no false alarm) but credits nothing, so a broken detector cannot
 *       hide behind a structure check (V4b then judges the damage).
 *   V1e with per-KV codes of two bytes or more, a bitflip_cache injection
 *       matches only kv_protection reports: another layer at its block
 *       says the flipped page reached the disk past the write-back check
 *       (KV4), which is the engine's failure, never an explanation.
 *   V1f a report that names no file (another engine's error that said
 *       nothing of where) is explained, without credit, by damage the
 *       fault door put in any of that engine's files.
 *   V2  a report that matches no injection is a false_alarm (a failure).
 *   V3  error classes (read_error, write_error, nospace, sync_error):
 *       detected when the driver's call that was running when the error
 *       was injected (same thread and op number) returned an error;
 *       swallowed (a failure) when it returned OK.  short_io: the engine
 *       must complete the transfer (masked); an error it caused is
 *       detected.
 *   V4  corruption classes without a matching report at settlement are
 *       masked (overwritten or never needed; the final verify of every
 *       page ran clean), or undetectable when the run measures that class.
 *   V4b masked needs the damage gone: an injection of this process that
 *       the fault library shows still on disk after the final verify of
 *       the closed files (vd_note_damage_present: nothing overwrote it),
 *       or a page flip of any process, before a crash too, whose block
 *       still hashes to what the flip made of it (vd_mark_present), and
 *       that no report matched, escaped the checks that exist to find it:
 *       swallowed (a failure), or undetectable when measured.  A data
 *       block at or past the high-water mark of the final verify is no
 *       part of the database (never written as far as the engine knows,
 *       so never read: the blocks of a batch a crash cut, written before
 *       their allocation was logged): damage there is masked.
 *   V4c a database that did not open has no final verify, so V4b asks the
 *       engine's page reader instead: each data block whose injected
 *       damage is provably still there (the fault library's D1-D4 for
 *       this process's own, the ledger's post hash for a page flip or a
 *       zeroed block of any process) is read from the closed files and
 *       checked as an open reads it (a zero page only below the control
 *       file's high-water mark: at or past it the block is legal as never
 *       written).  Its reports (vd_report.reader) credit as any report
 *       (V1d: only the class's detector); damage it passes is present
 *       with no credit: swallowed, even though the database is
 *       unrecoverable by design for another reason.
 *   V5  power_loss and kill: repaired when the post-crash recovery passed
 *       the exact-prefix check with no unexplained report (V8), lost when
 *       the check failed, unrecoverable when the database did not open or
 *       reported corruption no earlier injection explains; never masked.
 *   V6  a run measures (instead of judging) when its options make a class
 *       undetectable by design (vd_measuring); there the driver's wrong,
 *       lost and resurrected values count as undetectable, not failures
 *       (except a synced commit lost by recovery, always a failure).
 *   V6b misdirected_write is judged: the page that landed on the wrong
 *       block must be reported there (its block-seeded checksum); a wrong,
 *       lost or resurrected value blamed on it came from the block that
 *       missed its write (a lost write there) and counts as undetectable.
 *   V6c cache flips whose pairs the injector tested (ledger pair_check):
 *       a wrong, lost or resurrected value after a flip that escaped the
 *       codes is that escape's, whatever key it meets (the check after a
 *       crash too); one with no escape before it fails.  The escapes are
 *       held to the Poisson bound of the pairs' odds, in time too: past
 *       it those values fail and the escapes beyond the bound count as
 *       swallowed.
 *   V7  the verdict is pass when every failure count is zero.
 *   V8  a report made while opening after a crash (or after this
 *       process's own failed handle), or by the check right after, is
 *       explained only by an earlier injection of a corruption class at
 *       its place (V0-V1c): damage the engine cannot repair by design.
 *       Otherwise it is an unrecoverable failure (not also a false alarm).
 *       A database that does not open is unrecoverable unless every report
 *       of that open is so explained: then unrecoverable_by_design, naming
 *       the injection, counted apart and not failed.
 *   V9  a checked pattern flip (bitflip_cache with a "check" field: made,
 *       checked by the engine's whole-page check and undone under the
 *       frame's latch) is detected when its check said so and a report
 *       reached the oracle (else swallowed: the check's report was lost),
 *       and escaped when the check passed it.  Escapes are judged per
 *       pattern against the odds of the construction (vd_pattern_odds):
 *       more than the Poisson bound (tail < 1e-6) of the pattern's
 *       expected escapes (any escape of an odd-parity flip, a single bit
 *       included) turns every escape of the pattern into swallowed;
 *       within it they are undetectable (the code's design).  Reports
 *       matched to other injections at the block credit nothing here.
 *   V10 an engine's promises (its adapter's table, stress/promises.h,
 *       asked through vd_config.promise_of for an injection's class and
 *       file) decide what an undetected outcome is.  Where the engine
 *       promises nothing (VD_PROMISE_NONE), an error swallowed (V3),
 *       damage left unreported (V4b), a failed prefix check or an
 *       open that did not come back after a crash (V5, V8) that is such
 *       an injection or came after one, and a
 *       wrong, lost or resurrected value or a lost commit blamed on the
 *       injection, or seen after it (whatever injection
 *       came later: the engine is outside its promises from there on),
 *       are undetected_unpromised: counted in the class's column, never
 *       a failure.  Where it promises to repair (VD_PROMISE_REPAIR), an
 *       error class's failure may be hidden: a call that returned ok is
 *       repaired, and what the engine then returns is judged as always.
 *       Where it promises to detect, and without a table (promise_of
 *       NULL), the rules above stand.  An error class the engine reports
 *       as corruption (the table says so: SQLite's EIO on a read is
 *       SQLITE_CORRUPT), or one it promises nothing for, matches any
 *       report of the database (such a report does not tell which file's
 *       read failed: SQLite names its database file, and integrity_check
 *       a page, for a failed read of its log), which V0 lets no error
 *       class do otherwise: explained, not credited (V3 asks the call).
 *       Crashes and hangs of the engine fail whatever it promises.
 *
 * Settlement order.  The numbers group the rules by topic; vd_settle
 * (settle.c) applies them in the order their inputs need:
 *   0. V10: each injection's promise, asked of the engine's table (an
 *      error it reports as corruption may then match in 1);
 *   1. the reports, one per place and layer, each matched to the
 *      injections at its place: V1, with V0 (what may explain at all),
 *      V1e (the layers a cache flip matches) and V1d (what credits);
 *   2. each report left unmatched, in place order: V1b, then V1c (not for
 *      a V4c reader report), then V8 for a report of an open after a
 *      crash or a failed handle, V2 for any other;
 *   3. the opens: V6b and V6c read a post-crash check that failed, then
 *      V5 and V8 give the crash's outcome and the own reopen's (they need
 *      the unexplained reports of 2), and V8 names what explains them;
 *   4. each injection: V3 for the error classes, V5 for the crashes and
 *      the power-loss step's decisions (the outcome of 3), V9 for a
 *      checked pattern flip, V4 and V4b for the rest; then the opens no
 *      ledger line carries (an external kill, an own failed handle);
 *      (each outcome then under V10's promise);
 *   5. the driver's symptoms: V6, V6b, V6c, V10;
 *   6. the bound on the escapes of the per-KV codes (V6c, and its
 *      estimate for a ledger without pair_check);
 *   7. V9 per pattern: past its bound, a pattern's escapes counted in 4
 *      turn swallowed;
 *   8. V7.
 */
#ifndef ORACLE_VERDICT_H
#define ORACLE_VERDICT_H

#include <stddef.h>
#include <stdint.h>

/* Fault classes: the report keys of docs/fault-classes.md, in the fault
 * library's order; VD_NONE collects failures no injection explains. */
#define VD_CLASSES(X)                            \
    X(VD_BITFLIP_PAGE, "bitflip_page")           \
    X(VD_BITFLIP_WAL, "bitflip_wal")             \
    X(VD_BITFLIP_CACHE, "bitflip_cache")         \
    X(VD_BITFLIP_INFLIGHT, "bitflip_inflight")   \
    X(VD_TORN_WRITE, "torn_write")               \
    X(VD_MISDIRECTED_WRITE, "misdirected_write") \
    X(VD_LOST_WRITE, "lost_write")               \
    X(VD_ZERO_PAGE, "zero_page")                 \
    X(VD_READ_ERROR, "read_error")               \
    X(VD_WRITE_ERROR, "write_error")             \
    X(VD_NOSPACE, "nospace")                     \
    X(VD_SHORT_IO, "short_io")                   \
    X(VD_SYNC_ERROR, "sync_error")               \
    X(VD_POWER_LOSS, "power_loss")               \
    X(VD_KILL, "kill")

enum vd_class {
#define VD_ENUM(id, key) id,
    VD_CLASSES(VD_ENUM)
#undef VD_ENUM
        VD_CLASS_COUNT,
    VD_NONE = VD_CLASS_COUNT /* "unattributed" */
};

/* Report key of a class ("unattributed" for VD_NONE); -1 if unknown. */
const char *vd_class_name(int cls);
int vd_class_from_name(const char *name);

/* Outcome and failure counters: the report keys of docs/oracle.md,
 * "Outcomes and failures". */
/* clang-format 14 does not settle on one layout for this list. */
/* clang-format off */
#define VD_COUNTERS(X)                                                    \
    X(injected) X(detected) X(repaired) X(masked) X(undetectable)         \
    X(unrecoverable_by_design) X(undetected_unpromised)                   \
    X(wrong_value) X(lost) X(resurrected) X(false_alarm) X(swallowed)     \
    X(unrecoverable) X(crash) X(hang)
/* clang-format on */

typedef struct vd_counts {
#define VD_FIELD(n) uint64_t n;
    VD_COUNTERS(VD_FIELD)
#undef VD_FIELD
} vd_counts;

/* Sum of the failure counters. */
uint64_t vd_failures(const vd_counts *c);

/* What the run's options make of each class. */
typedef struct vd_config {
    int class_on[VD_CLASS_COUNT]; /* the class was asked for */
    int data_checksums;
    int full_page_writes;
    int protection_bytes; /* block_protection_bytes_per_key (w) */
    uint32_t page_size;
    uint64_t wal_segment_size; /* to place WAL reports given by LSN */
    /* V10: what the engine promises for an injection of class CLS in
     * FILE (relative to the database directory; "" for a crash with no
     * ledger line), enum vd_promise, and in *AS_CORRUPTION 1 when the
     * engine reports that failure as corruption; NULL: it promises to
     * detect everything as itself (the usual rules). */
    int (*promise_of)(void *ctx, int cls, const char *file, int *as_corruption);
    void *promise_ctx;
} vd_config;

/* V10: an engine's promise for a class and file kind (stress/promises.h
 * has the same three, in this order). */
enum vd_promise { VD_PROMISE_DETECT = 0, VD_PROMISE_REPAIR, VD_PROMISE_NONE };

/* 1 if the options make class CLS undetectable by design (docs/oracle.md,
 * rule V6). */
int vd_class_measured(const vd_config *c, int cls);
/* 1 if the run measures (some enabled class is undetectable by design);
 * WHY (if not NULL) gets the reasons, "; "-separated. */
int vd_measuring(const vd_config *c, char *why, size_t cap);

/* One ledger line, parsed. */
typedef struct vd_injection {
    int64_t seq;
    int cls; /* enum vd_class, or -1 for a class this oracle does not know */
    char cls_name[32];
    char phase[16]; /* "run", "powerloss", "recovery" */
    char point[96];
    char file[64];
    char to[64]; /* a "moved" line: the name FILE was renamed to ("" absent) */
    int64_t block, offset, len, op, bit;
    int64_t part_offset, part_len; /* cache flips: bytes one parity bit of
                                    * the per-KV codes covers (-1: absent) */
    char part_code[8];             /* ... and which code covers them: "page",
                                    * "entry", "none" ("": absent, a ledger
                                    * older than it: taken as "entry") */
    int64_t pair_of;               /* with part_code: the seq of an earlier
                                    * flip still in that part (-1: none) */
    char pair_check[12];           /* with pair_of: "escaped" (this flip made
                                    * a damaged code match: the injector
                                    * tested the frame), "detected", "none";
                                    * "" absent (a ledger older than it) */
    int thread;                    /* -1: absent */
    /* bitflip_cache with patterns (faults/cacheflip.c): the pattern, the
     * parity of its parts ("odd", "entry", "span", "slot", "page") and the outcome of the
     * check made right after the flip ("detected", "escaped", "none");
     * "" absent */
    char pattern[16], parity[8], check[12];
    /* where the damage landed by the format (faults/ledger.h); for a
     * lost or misdirected write, the type of the page that missed its
     * block ("clog": commit statuses kept old, V6b); "" absent */
    char region[16];
    char err[16];
    char mask[24];
    int carried;                  /* injected by an earlier process (before a crash) */
    int present;                  /* V4b: still on disk after the final verify */
    uint64_t page_pre, page_post; /* bitflip_page: XXH64 of the block before and
                                   * after the flip (ledger pre/post; 0 absent) */
    /* verdict, filled by vd_settle */
    int outcome;       /* enum vd_outcome */
    uint32_t reports;  /* reports that matched it */
    int promise;       /* V10: enum vd_promise, as promise_of said */
    int as_corruption; /* V10: the engine reports this error as corruption */
} vd_injection;

enum vd_outcome {
    VD_PENDING = 0,
    VD_DETECTED,
    VD_REPAIRED,
    VD_MASKED,
    VD_UNDETECTABLE,
    VD_SWALLOWED,
    VD_LOST,
    VD_UNRECOVERABLE,
    VD_UNRECOVERABLE_BY_DESIGN,
    VD_UNDETECTED_UNPROMISED, /* V10 */
    VD_OUTCOME_COUNT
};
const char *vd_outcome_name(int outcome);

/* Parse one ledger line.  0 on success, -1 if the line is not a JSON
 * object.  Unknown keys are ignored. */
int vd_parse_ledger_line(const char *line, vd_injection *out);

/* A corruption report as the engine gave it. */
typedef struct vd_report {
    char layer[32];
    char file[64];
    int64_t block;    /* -1: unknown */
    int64_t offset;   /* -1: unknown; for a WAL report without a block: the LSN */
    int32_t entry;    /* for a WAL record: blocks it spans past its first (its
                      * damage may be in any); else -1 or the entry */
    char detail[160]; /* the engine's words, for messages (not judged) */
    int after_crash;  /* made while the database was opened (recovered), or by
                      * the check right after that open: 1 after a crash,
                      * 2 after this process's own failed handle, 0 other
                      * (rule V8) */
    int reader;       /* V4c: made by the engine's page reader on a block of the
                      * closed files of a database that did not open, read to
                      * judge damage still there: it credits and explains the
                      * injections at its place, and nothing else (never a
                      * false alarm, never a V8 report, never V1c) */
} vd_report;

/* What the driver saw. */
enum vd_obs_kind {
    VD_OBS_ERROR = 1,   /* a call returned an error (status != ok / notfound) */
    VD_OBS_WRONG_VALUE, /* a read returned another value without error */
    VD_OBS_LOST,        /* a key that must exist is absent */
    VD_OBS_RESURRECTED, /* a deleted key is back */
    VD_OBS_LOST_COMMIT, /* recovery ended before the last durable commit */
    VD_OBS_CRASH,       /* the engine crashed (signal) */
    VD_OBS_HANG,        /* no progress for too long */
};

typedef struct vd_observation {
    int kind; /* enum vd_obs_kind */
    int thread;
    int64_t op; /* the op number given to the fault library */
    int status; /* VD_OBS_ERROR: the engine's status code */
    uint64_t key;
    uint64_t inj_mark; /* injections of this process so far (attribution) */
    int after_crash;   /* seen by the post-crash check */
    int carried;       /* read back from an earlier process */
} vd_observation;

typedef struct vd_ctx vd_ctx;

vd_ctx *vd_new(const vd_config *c);
void vd_free(vd_ctx *v);

/* Feed the judge.  CARRIED: the line was written by an earlier process
 * (a crashed run, or the power-loss step) and is judged here.  Returns 0
 * for an injection added, 1 for a line that is none (class "delay": a
 * pause that widened a race window, faults/delay.c; class "moved": a
 * file that carries flips was renamed, and the injections placed in it
 * are placed under its new name from then on), -1 for a line that does
 * not parse. */
int vd_add_ledger_line(vd_ctx *v, const char *line, int carried);
void vd_add_report(vd_ctx *v, const vd_report *r);
void vd_add_observation(vd_ctx *v, const vd_observation *o);
/* What the open after a crash (or after this process's own failed handle)
 * came to. */
enum vd_crash_check {
    VD_CHECK_NONE = -1,   /* no open after a crash in this process */
    VD_CHECK_LOST = 0,    /* opened; the exact-prefix check failed */
    VD_CHECK_PASSED = 1,  /* opened; the exact-prefix check passed */
    VD_CHECK_NO_OPEN = 2, /* the database did not open (corruption reported) */
};
void vd_set_crash_check(vd_ctx *v, int crash_check);
/* Reopening this process's own failed (poisoned) handle did not open the
 * database: recovery without a crash failed (V8). */
void vd_note_reopen_failed(vd_ctx *v);
/* V4b: the data file's high-water mark when the final verify read it
 * (the closed files' control file).  Damage at or past it is outside the
 * database, never read: vd_mark_present and vd_note_damage_present leave
 * it out (masked).  Call before them; unset, every block counts. */
void vd_note_final_hwm(vd_ctx *v, uint64_t hwm);
/* V4b: this process's ledger line SEQ put damage into the data file that
 * is still there after the final verify of the closed files (the fault
 * library's flt_damage_present).  Call after the ledger lines are added. */
void vd_note_damage_present(vd_ctx *v, int64_t seq);
/* V4b for any injection, this process's or carried from before a crash:
 * injection K (vd_injection_at order) is still there after the final
 * verify (a bitflip_page whose block hashes to its page_post). */
void vd_mark_present(vd_ctx *v, size_t k);
/* An external kill (SIGKILL from outside, no ledger line) preceded this
 * run: counted as one kill injection. */
void vd_note_external_kill(vd_ctx *v);

typedef struct vd_result {
    vd_counts cls[VD_CLASS_COUNT + 1]; /* per class, [VD_NONE] unattributed */
    vd_counts total;
    int measuring;
    char measuring_why[256];
    int pass;
    uint64_t reports, false_alarms;
    /* V8: the open after a crash failed or reported corruption.  BY_DESIGN
     * names the earlier injection that explains it ("" when nothing does:
     * then it is an unrecoverable failure). */
    int unrecoverable;
    char by_design[240];
    char unrecoverable_why[400]; /* when it is a failure: what recovery met */
} vd_result;

/* Judge everything fed so far (may be called again after more input). */
void vd_settle(vd_ctx *v, vd_result *out);

/* Read access for messages and the report. */
size_t vd_injection_count(const vd_ctx *v);
const vd_injection *vd_injection_at(const vd_ctx *v, size_t i);
/* Index of the first injection of this process (not carried). */
size_t vd_first_own(const vd_ctx *v);
/* Reports that matched no injection (after vd_settle). */
size_t vd_false_alarm_count(const vd_ctx *v);
const vd_report *vd_false_alarm_at(const vd_ctx *v, size_t i);

/* 1 if report R points at the place injection I touched (rule V1). */
int vd_report_matches(const vd_config *c, const vd_report *r, const vd_injection *i);
/* 1 if report R is explained by injection I under rule V1b. */
int vd_report_explained(const vd_config *c, const vd_report *r, const vd_injection *i);

/* 1 if injection I is a decision of the power-loss step (phase
 * "powerloss": rollbacks, tears, undone metadata).  A run that finds one
 * carried in its ledger follows a crash, however the process before it
 * ended: a power loss after a clean exit is a crash too. */
int vd_from_powerloss_step(const vd_injection *i);

/* 1 if injection I may explain a corruption report (V0): the power-loss
 * step's own decisions (phase "powerloss": rollbacks, undone metadata,
 * tears) and the dirty data an fsync failure dropped ("sync/drop_dirty")
 * are states the engine must recover from, so they explain nothing; the
 * one exception is a power-loss tear with full_page_writes off, where no
 * image exists to rebuild the page (torn_write is measured there). */
int vd_injection_explains(const vd_config *c, const vd_injection *i);

/* Escape rates per protection width: the hook for narrow per-key codes
 * (docs/oracle.md, Narrow per-KV codes: a Poisson bound): writes
 * {"W": {"checked", "escaped", "rate", "bound"}} for the run's width W into
 * BUF, and with checked pattern flips (V9) "patterns": {"NAME":
 * {"checked", "detected", "escaped", "expected", "bound"}} inside it.  At
 * w = 0 there is nothing to measure: writes "{}".  BUF: VD_ESCAPE_JSON_MAX
 * bytes are always enough. */
#define VD_ESCAPE_JSON_MAX 2048
/* The odds that one checked pattern flip escapes a code of W bytes, from
 * the construction (engine/kvprot.h): PARITY "odd" (a part got an odd
 * count: a parity bit differs) 0; "entry" 2^-(8w-3) (the hash bits);
 * "span" (a length changed: the rest's parity is over other bytes, a coin
 * toss) 2^-(8w-2); "slot" (the slot points elsewhere: both cell parities
 * are coin tosses) 2^-(8w-1); "page" 2^-31. */
double vd_pattern_odds(const char *parity, int w);
/* The patterns of faults/cacheflip.c, in report order. */
#define VD_PATTERN_COUNT 5
const char *vd_pattern_name(int i);
int vd_escape_rates_json(const vd_ctx *v, char *buf, size_t cap);

#endif
