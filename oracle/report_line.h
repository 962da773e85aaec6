/*
 * report_line.h -- the line format of the files the stress driver writes
 * into the run directory for the oracle: RUN_DIR/reports (one corruption
 * report per line) and RUN_DIR/observations (one observation per line).
 * Defined here once: the driver writes through orc_*_line_format and reads
 * a crashed predecessor's lines back through orc_*_line_parse.
 *
 * Each line is one flat JSON object, keys in this order, ending in "\n":
 *
 *   reports:
 *     {"layer":"S","file":"S","block":I,"offset":I,"entry":I,"after_crash":I}
 *       layer        the engine's detector (vd_report.layer, at most 31 bytes)
 *       file         relative to the database directory (at most 63 bytes)
 *       block        -1: unknown
 *       offset       -1: unknown (a WAL report without a block: the LSN)
 *       entry        -1: unknown (vd_report.entry)
 *       after_crash  0, 1 or 2 (vd_report.after_crash, rule V8)
 *
 *   observations:
 *     {"kind":"K","thread":I,"op":I,"status":I,"key":U}
 *       kind    error | wrong_value | lost | resurrected | lost_commit |
 *               crash | hang  (enum vd_obs_kind)
 *       thread  -1: none (a crash, a hang)
 *       op      the fault library's op number (-1: none)
 *       status  the adapter's status (kind error), else 0
 *       key     the key, 0 when none
 *
 * S is a JSON string ('"', '\\' and control bytes escaped), I a decimal
 * integer.  The parsers accept any order, whitespace between tokens and
 * unknown keys (with string or integer values); a key left out takes the
 * default above (-1 for the integers that have one, else 0, "").  They
 * reject, with -1 and nothing else, any line that is not such an object:
 * a torn line, nested values, a missing "layer" or an unknown "kind".
 */
#ifndef ORACLE_REPORT_LINE_H
#define ORACLE_REPORT_LINE_H

#include <stddef.h>

#include "verdict.h"

/* File names in the run directory. */
#define ORC_REPORTS_FILE      "reports"
#define ORC_OBSERVATIONS_FILE "observations"

/* No line the formatters write is longer (with its "\n"). */
#define ORC_LINE_MAX 1024

/* The observation a dying process writes from its signal handler (no
 * formatting there): a crash, no thread, no op. */
#define ORC_OBS_CRASH_LINE "{\"kind\":\"crash\",\"thread\":-1,\"op\":-1,\"status\":0,\"key\":0}\n"

/* Name of an observation kind ("?" if unknown), and back (-1 if unknown). */
const char *orc_obs_kind_name(int kind);
int orc_obs_kind_from_name(const char *name);

/* Write R's (O's) line, "\n" included, into BUF[0..CAP).  Returns its
 * length, or -1 when it does not fit (BUF then holds nothing useful). */
int orc_report_line_format(char *buf, size_t cap, const vd_report *r);
int orc_obs_line_format(char *buf, size_t cap, const vd_observation *o);

/* Parse one line (its "\n" optional) into *OUT (zeroed first; detail
 * empty, inj_mark, after_crash of an observation and carried 0).
 * Returns 0, or -1 if the line is malformed. */
int orc_report_line_parse(const char *line, vd_report *out);
int orc_obs_line_parse(const char *line, vd_observation *out);

#endif
