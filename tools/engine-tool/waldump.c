/*
 * waldump.c -- engine-tool waldump: every WAL record from the redo point
 * (or --from), one line each, decoded (pg_waldump style).  It reads DIR/wal
 * itself, with the engine's WAL reader and record decoders (inspect.h),
 * so it works on a database the engine will not open and never writes
 * anything.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "format.h"
#include "inspect.h"
#include "tool.h"

/* Where reports go: engine.h's callback and its context. */
typedef struct log_rep {
    eng_corruption_fn fn;
    void *ctx;
} log_rep;

/* Deliver a report (layer wal_record) the way the engine's reader does. */
static void report(const log_rep *rep, const char *file, int64_t block, int64_t offset, uint64_t expected,
                   uint64_t found, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void report(const log_rep *rep, const char *file, int64_t block, int64_t offset, uint64_t expected,
                   uint64_t found, const char *fmt, ...) {
    eng_corruption r;
    memset(&r, 0, sizeof r);
    r.layer = ENG_LAYER_WAL;
    snprintf(r.file, sizeof r.file, "%s", file);
    r.block = block;
    r.offset = offset;
    r.entry = -1;
    r.expected = expected;
    r.found = found;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.detail, sizeof r.detail, fmt, ap);
    va_end(ap);
    rep->fn(rep->ctx, &r);
}

/* printf to F, or nothing when F is NULL (verify decodes without printing). */
static void outf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(FILE *f, const char *fmt, ...) {
    if (f == NULL) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
}

static const char *rec_type_name(int type) {
    switch (type) {
    case WAL_REC_BATCH: return "batch";
    case WAL_REC_PAGES: return "pages";
    case WAL_REC_CHECKPOINT: return "checkpoint";
    default: return NULL;
    }
}

/* WAL_REC_BATCH: "seq=S ops=N" and the first WALDUMP_OPS operations.
 * Returns NULL, or why the payload does not decode. */
static const char *describe_batch(FILE *f, const uint8_t *p, size_t len) {
    uint32_t nops = 0;
    if (pa_batch_count(p, len, &nops)) return "batch payload does not decode";
    pa_batch b = {0, 0, calloc(nops, sizeof(pa_op))};
    if (b.ops == NULL) return "out of memory decoding a batch";
    if (pa_batch_decode(p, len, &b)) {
        free(b.ops);
        return "batch payload does not decode";
    }
    outf(f, " seq=%" PRIu64 " ops=%" PRIu32, b.seq, b.nops);
    char shown[4 * SHOW_KEY_BYTES + 4];
    for (uint32_t i = 0; i < b.nops && i < WALDUMP_OPS; i++) {
        const pa_op *o = &b.ops[i];
        if (o->kind == BOP_PUT)
            outf(f, " put k=%s vlen=%" PRIu32, escape_key(o->key, o->klen, SHOW_KEY_BYTES, shown), o->vlen);
        else
            outf(f, " del k=%s", escape_key(o->key, o->klen, SHOW_KEY_BYTES, shown));
    }
    if (b.nops > WALDUMP_OPS) outf(f, " ...(%" PRIu32 " more)", b.nops - WALDUMP_OPS);
    free(b.ops);
    return NULL;
}

/* One page action, its fields at format.h's offsets (pageop.h says what
 * they mean).  Q is the action past its common prefix (kind, block);
 * pa_parse has checked that every field read here lies inside the record. */
static void describe_action(FILE *f, int kind, uint32_t block, const uint8_t *q) {
    switch (kind) {
    case PA_IMAGE:
        outf(f, " image(block=%" PRIu32 " hole=%u+%u codec=%s bytes=%" PRIu32 ")", block,
             (unsigned)fmt_get16(q + PA_IMAGE_HOLE_OFF), (unsigned)fmt_get16(q + PA_IMAGE_HOLE_LEN_OFF),
             q[PA_IMAGE_CODEC_OFF] == PA_CODEC_RAW    ? "raw"
             : q[PA_IMAGE_CODEC_OFF] == PA_CODEC_ZSTD ? "zstd"
                                                      : "unknown",
             fmt_get32(q + PA_IMAGE_STORED_OFF));
        break;
    case PA_INIT: {
        uint8_t type = q[PA_INIT_TYPE_OFF];
        const char *t = type <= PAGE_TYPE_MAX ? page_type_name(type) : NULL;
        outf(f, " init(block=%" PRIu32 " type=%s level=%u next=%" PRIu32 " aux=%" PRIu32 ")", block, t ? t : "unknown",
             (unsigned)fmt_get16(q + PA_INIT_LEVEL_OFF), fmt_get32(q + PA_INIT_NEXT_OFF),
             fmt_get32(q + PA_INIT_AUX_OFF));
        break;
    }
    case PA_FREE: outf(f, " free(block=%" PRIu32 " next=%" PRIu32 ")", block, fmt_get32(q + PA_FREE_NEXT_OFF)); break;
    case PA_OVFL:
        outf(f, " ovfl(block=%" PRIu32 " next=%" PRIu32 " len=%" PRIu32 " src=%s)", block,
             fmt_get32(q + PA_OVFL_NEXT_OFF), fmt_get32(q + PA_OVFL_LEN_OFF),
             q[PA_OVFL_SRC_OFF] == PA_SRC_BYTES ? "bytes" : "op");
        break;
    case PA_INSERT:
        outf(f, " insert(block=%" PRIu32 " idx=%u src=%s)", block, (unsigned)fmt_get16(q + PA_INSERT_IDX_OFF),
             q[PA_INSERT_CELL_OFF + CS_SRC_OFF] == PA_SRC_BYTES ? "bytes" : "op");
        break;
    case PA_REMOVE:
        outf(f, " remove(block=%" PRIu32 " idx=%u)", block, (unsigned)fmt_get16(q + PA_REMOVE_IDX_OFF));
        break;
    case PA_SPLIT:
        outf(f, " split(block=%" PRIu32 " m=%u next=%" PRIu32 ")", block, (unsigned)fmt_get16(q + PA_SPLIT_M_OFF),
             fmt_get32(q + PA_SPLIT_NEXT_OFF));
        break;
    case PA_META:
        outf(f, " meta(nblocks=%" PRIu32 " freelist=%" PRIu32 ")", fmt_get32(q + PA_META_NBLOCKS_OFF),
             fmt_get32(q + PA_META_FREELIST_OFF));
        break;
    case PA_SETNEXT:
        outf(f, " setnext(block=%" PRIu32 " next=%" PRIu32 ")", block, fmt_get32(q + PA_SETNEXT_NEXT_OFF));
        break;
    case PA_PUSHFREE:
        outf(f, " pushfree(trunk=%" PRIu32 " freed=%" PRIu32 ")", block, fmt_get32(q + PA_PUSHFREE_FREED_OFF));
        break;
    case PA_POPFREE: outf(f, " popfree(trunk=%" PRIu32 ")", block); break;
    case PA_SETXMAX:
        outf(f, " setxmax(block=%" PRIu32 " idx=%u xid=%" PRIu64 ")", block,
             (unsigned)fmt_get16(q + PA_SETXMAX_IDX_OFF), fmt_get64(q + PA_SETXMAX_XID_OFF));
        break;
    case PA_FREEZE:
        outf(f, " freeze(block=%" PRIu32 " idx=%u)", block, (unsigned)fmt_get16(q + PA_FREEZE_IDX_OFF));
        break;
    case PA_CLOGSET:
        outf(f, " clogset(block=%" PRIu32 " entry=%" PRIu32 " status=%s)", block, fmt_get32(q + PA_CLOGSET_INDEX_OFF),
             q[PA_CLOGSET_STATUS_OFF] == CLOG_COMMITTED ? "committed"
             : q[PA_CLOGSET_STATUS_OFF] == CLOG_ABORTED ? "aborted"
                                                        : "in-progress");
        break;
    case PA_CLOGDIR:
        outf(f, " clogdir(page=%" PRIu32 " block=%" PRIu32 ")", fmt_get32(q + PA_CLOGDIR_ENTRY_OFF),
             fmt_get32(q + PA_CLOGDIR_BLOCK_OFF));
        break;
    case PA_HINTS:
        outf(f, " hints(block=%" PRIu32 " bytes=%u)", block, (unsigned)fmt_get16(q + PA_HINTS_LEN_OFF));
        break;
    }
}

/* WAL_REC_PAGES: "batch=<lsn> op=I" and every action. */
static const char *describe_pages(FILE *f, const uint8_t *p, size_t len) {
    if (len < PA_REC_HDR) return "page record shorter than its header";
    uint32_t op = fmt_get32(p + PR_OP_OFF);
    uint64_t batch = fmt_get64(p + PR_BATCH_LSN_OFF);
    if (op == PA_OP_COMMIT)
        outf(f, " batch=0x%" PRIx64 " op=commit", batch);
    else if (op == PA_OP_ABORT)
        outf(f, " batch=0x%" PRIx64 " op=abort", batch);
    else if (op == PA_OP_MAINT)
        outf(f, " op=maint");
    else
        outf(f, " batch=0x%" PRIx64 " op=%" PRIu32, batch, op);
    size_t off = PA_REC_HDR;
    if (off == len) return "page record without actions";
    while (off < len) {
        int kind = 0;
        uint32_t block = 0;
        size_t n = pa_parse(p + off, len - off, &kind, &block);
        if (n == 0) return "malformed page action";
        describe_action(f, kind, block, p + off + PA_PREFIX);
        if ((kind == PA_META || kind == PA_CLOGDIR) && block != 0) return "meta action names a block other than 0";
        off += n;
    }
    return NULL;
}

/* WAL_REC_CHECKPOINT (format.h). */
static const char *describe_checkpoint(FILE *f, const uint8_t *p, size_t len) {
    if (len != CK_SIZE) return "checkpoint record is not 24 bytes";
    outf(f, " redo=0x%" PRIx64 " last_seq=%" PRIu64 " nblocks=%" PRIu64, fmt_get64(p + CK_REDO_OFF),
         fmt_get64(p + CK_LAST_SEQ_OFF), fmt_get64(p + CK_NBLOCKS_OFF));
    return NULL;
}

/* Report, as the reader does, a problem with the record at LSN. */
static void report_record(const log_rep *rep, uint64_t seg_size, uint64_t lsn, uint64_t expected, uint64_t found,
                          const char *why) {
    uint64_t seg = lsn & ~(seg_size - 1);
    char file[64];
    snprintf(file, sizeof file, "%s/%016" PRIx64, WAL_DIR, seg);
    report(rep, file, (int64_t)((lsn - seg) / WAL_BLOCK), (int64_t)(lsn - seg), expected, found,
           "record at LSN 0x%llx passes its checksum but does not decode: %s", (unsigned long long)lsn, why);
}

typedef struct log_walk {
    uint64_t records;   /* records read */
    uint64_t malformed; /* records that passed their checksum but do not decode */
    uint64_t end;       /* at the end: just past the last good record */
    int trimmed;        /* a torn tail after END was cut */
    int limited;        /* stopped by the limit, the next record at END */
} log_walk;

/* Read the log of D (segments of SEG_SIZE) from FROM with wal_reader,
 * decoding every record; with OUT, print one line per record.  Reports (a
 * damaged record in the synced part, a payload that does not decode) go
 * to REP.  LIMIT > 0 stops after that many records.  Returns ENG_OK at
 * the end of the log or the limit (W->malformed counts undecodable
 * records), ENG_CORRUPTION when the reader stopped at a damaged record,
 * or the status that stopped it. */
static int walk_log(insp_dir *d, uint64_t seg_size, uint64_t from, uint64_t limit, FILE *out, int json,
                    const log_rep *rep, log_walk *w) {
    memset(w, 0, sizeof *w);
    w->end = from;
    wal_reader *r = NULL;
    int st = insp_log_open(d, seg_size, from, rep->fn, rep->ctx, &r);
    if (st != ENG_OK) return st;
    wal_record rec;
    FILE *line_out = out;
    char *lbuf = NULL;
    size_t llen = 0;
    while ((st = wal_reader_next(r, &rec)) == ENG_OK) {
        w->records++;
        w->end = rec.end;
        const char *name = rec_type_name(rec.type);
        /* --json: the line goes to a buffer, then into the record's object */
        if (json && out && (line_out = open_memstream(&lbuf, &llen)) == NULL) {
            st = ENG_NOMEM;
            break;
        }
        FILE *record_out = out;
        out = line_out;
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
        if (why) outf(out, " MALFORMED: %s", why);
        if (json && record_out) {
            fclose(line_out);
            fprintf(record_out,
                    "%s\n  {\"lsn\": \"0x%" PRIx64 "\", \"len\": %zu, \"type\": ", w->records > 1 ? "," : "", rec.lsn,
                    rec.len + WAL_REC_HDR);
            char tn[32];
            snprintf(tn, sizeof tn, "unknown(%d)", rec.type);
            json_fput_str(record_out, name ? name : tn);
            fprintf(record_out, ", \"prev\": \"0x%" PRIx64 "\", \"malformed\": %s, \"text\": ", rec.prev,
                    why ? "true" : "false");
            json_fput_str(record_out, lbuf ? lbuf : "");
            fputc('}', record_out);
            free(lbuf);
            lbuf = NULL;
        } else {
            outf(out, "\n");
        }
        out = record_out;
        if (why) {
            w->malformed++;
            report_record(rep, seg_size, rec.lsn, 0, (uint64_t)rec.type, why);
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
static void report_no_redo_record(const log_rep *rep, uint64_t redo, uint64_t end) {
    report(rep, WAL_DIR, -1, (int64_t)redo, redo, end,
           "the log holds no record at the redo point (LSN 0x%llx): the checkpoint's "
           "record is missing",
           (unsigned long long)redo);
}

/* Reports of a log read: counted, and the first one kept. */
typedef struct log_reports {
    uint64_t count;
    eng_corruption first;
} log_reports;

/* Print each report as it comes (waldump); with --json, keep it as an
 * item of the document's "corruption" array. */
static FILE *json_reports;
static void print_log_report(void *ctx, const eng_corruption *r) {
    log_reports *lr = ctx;
    if (json_reports) {
        fprintf(json_reports, "%s\n  ", lr->count ? "," : "");
        print_report_json(json_reports, r);
    } else {
        print_report(stdout, r);
    }
    if (lr->count++ == 0) lr->first = *r;
}

/* Only keep it (a report that is a note, not the result). */
static void keep_report(void *ctx, const eng_corruption *r) {
    log_reports *lr = ctx;
    if (lr->count++ == 0) lr->first = *r;
}

/* Where the walk starts, and what is known of the log's geometry. */
typedef struct wd_plan {
    uint64_t seg_size, start;
    int from_redo;  /* START is the control file's redo point */
    int size_known; /* SEG_SIZE is the log's, not only a size it reads the same at */
} wd_plan;

/* Without a readable control file: the segment size from
 * --wal-segment-size or from the segment files, with a note on stderr.
 * EXIT_ERROR (said) when there are no segments. */
static int seg_size_of_files(const tool_args *a, wd_plan *p) {
    uint64_t lo = 0, hi = 0;
    int sr = wal_seg_size_bounds(a->dir, &lo, &hi);
    if (sr != ENG_OK) {
        fprintf(stderr, "engine-tool: waldump %s: no WAL segments in %s/%s\n", a->dir, a->dir, WAL_DIR);
        return EXIT_ERROR;
    }
    if (a->given & OPT_WAL_SEGMENT_SIZE) {
        p->seg_size = a->wal_segment_size;
        if (p->seg_size < lo || p->seg_size > hi)
            fprintf(stderr,
                    "engine-tool: note: --wal-segment-size %" PRIu64 " disagrees with the segment files "
                    "(%" PRIu64 "..%" PRIu64 ")\n",
                    p->seg_size, lo, hi);
    } else if (lo == hi) {
        p->seg_size = lo;
        fprintf(stderr, "engine-tool: note: WAL segment size %" PRIu64 " read from the segment files\n", p->seg_size);
    } else {
        /* One segment: every LSN in it maps to it at any size from LO
         * to HI, so its records read the same; only the size is unknown. */
        p->seg_size = lo;
        p->size_known = 0;
        fprintf(stderr,
                "engine-tool: note: the WAL segment size cannot be told from one segment file: "
                "between %" PRIu64 " and %" PRIu64 " bytes (its records read the same at any of them; "
                "--wal-segment-size gives it)\n",
                lo, hi);
    }
    return 0;
}

/* The segment size and the start: the control file's redo point, --from,
 * or the oldest record (--from-oldest, or no readable control file
 * without --from).  0, or EXIT_ERROR once said on stderr. */
static int plan_walk(const tool_args *a, insp_dir *d, wd_plan *p) {
    log_reports noted;
    memset(&noted, 0, sizeof noted);
    int oldest = a->from_oldest;
    int st = insp_read_control(d, &p->seg_size, &p->start, keep_report, &noted);
    if (st == ENG_OK) {
        p->from_redo = !(a->given & OPT_FROM);
    } else if (st == ENG_NOTFOUND || st == ENG_CORRUPTION) {
        if (st == ENG_NOTFOUND) {
            fprintf(stderr, "engine-tool: note: %s has no control file\n", a->dir);
        } else {
            char line[512];
            eng_corruption_format(&noted.first, line, sizeof line);
            fprintf(stderr, "engine-tool: note: %s: control file unreadable: %s\n", a->dir,
                    noted.count ? line : "corruption");
        }
        if (seg_size_of_files(a, p)) return EXIT_ERROR;
        if (!(a->given & OPT_FROM)) oldest = 1;
    } else {
        fprintf(stderr, "engine-tool: waldump %s: reading the control file: %s\n", a->dir, eng_strerror(st));
        return EXIT_ERROR;
    }
    if (oldest) {
        if (insp_oldest_record(d, p->seg_size, &p->start) != ENG_OK) {
            fprintf(stderr, "engine-tool: waldump %s: no WAL segments in %s/%s\n", a->dir, a->dir, WAL_DIR);
            return EXIT_ERROR;
        }
        if (!a->from_oldest)
            fprintf(stderr,
                    "engine-tool: note: starting at the oldest segment's first record, "
                    "lsn=0x%" PRIx64 "\n",
                    p->start);
    } else if (a->given & OPT_FROM) {
        p->start = a->from;
    }
    return 0;
}

/* --json: the walk as one document on stdout; closes D. */
static int dump_json(const tool_args *a, insp_dir *d, const wd_plan *p) {
    log_reports shown;
    memset(&shown, 0, sizeof shown);
    log_rep rep = {print_log_report, &shown};
    log_walk w;
    char *rbuf = NULL, *cbuf = NULL;
    size_t rlen = 0, clen = 0;
    FILE *recs = open_memstream(&rbuf, &rlen);
    json_reports = open_memstream(&cbuf, &clen);
    if (!recs || !json_reports) {
        fprintf(stderr, "engine-tool: waldump: out of memory\n");
        insp_close(d);
        return EXIT_ERROR;
    }
    int st = walk_log(d, p->seg_size, p->start, a->limit, recs, 1, &rep, &w);
    insp_close(d);
    if (st == ENG_OK && !w.limited && p->from_redo && w.records == 0) report_no_redo_record(&rep, p->start, w.end);
    fclose(recs);
    fclose(json_reports);
    json_reports = NULL;
    printf("{\"start_lsn\": \"0x%" PRIx64 "\", \"segment_size\": %" PRIu64 ", \"segment_size_known\": %s, "
           "\"records\": [%.*s%s],\n",
           p->start, p->seg_size, p->size_known ? "true" : "false", (int)rlen, rbuf ? rbuf : "", rlen ? "\n" : "");
    printf(" \"record_count\": %" PRIu64 ", \"end_lsn\": \"0x%" PRIx64 "\", \"trimmed\": %s, \"limited\": %s, "
           "\"complete\": %s, \"corruption\": [%.*s%s]}\n",
           w.records, w.end, w.trimmed ? "true" : "false", w.limited ? "true" : "false",
           st == ENG_OK || st == ENG_CORRUPTION ? "true" : "false", (int)clen, cbuf ? cbuf : "", clen ? "\n" : "");
    free(rbuf);
    free(cbuf);
    if (st != ENG_OK && st != ENG_CORRUPTION) {
        fprintf(stderr, "engine-tool: waldump %s: reading the log after %" PRIu64 " records: %s\n", a->dir, w.records,
                eng_strerror(st));
        return EXIT_ERROR;
    }
    return (st == ENG_CORRUPTION || shown.count) ? EXIT_PROBLEM : EXIT_OK;
}

/* One line per record and one for how the walk ended; closes D. */
static int dump_text(const tool_args *a, insp_dir *d, const wd_plan *p) {
    log_reports shown;
    memset(&shown, 0, sizeof shown);
    log_rep rep = {print_log_report, &shown};
    log_walk w;
    int st = walk_log(d, p->seg_size, p->start, a->limit, stdout, 0, &rep, &w);
    insp_close(d);
    if (st == ENG_OK && w.limited) {
        printf("stopped after %" PRIu64 " records (--limit); next lsn=0x%" PRIx64 "\n", w.records, w.end);
    } else if (st == ENG_OK) {
        if (p->from_redo && w.records == 0) report_no_redo_record(&rep, p->start, w.end);
        printf("end of log at lsn=0x%" PRIx64 "%s\n", w.end, w.trimmed ? " (torn tail trimmed)" : "");
    } else if (st != ENG_CORRUPTION) {
        fprintf(stderr, "engine-tool: waldump %s: reading the log after %" PRIu64 " records: %s\n", a->dir, w.records,
                eng_strerror(st));
        return EXIT_ERROR;
    }
    if (st == ENG_CORRUPTION && shown.count == 0) printf("corruption: (no report recorded)\n");
    if (st == ENG_CORRUPTION && w.records == 0 && (a->given & OPT_FROM) && !a->from_oldest)
        fprintf(stderr,
                "engine-tool: note: is --from %s the LSN of a record?  The first record "
                "did not read\n",
                a->from_str);
    return (st == ENG_CORRUPTION || shown.count) ? EXIT_PROBLEM : EXIT_OK;
}

int cmd_waldump(const tool_args *a) {
    int rc = require_dir(a->dir);
    if (rc) return rc;
    insp_dir *d = NULL;
    int st = insp_open(a->dir, &d);
    if (st != ENG_OK) {
        fprintf(stderr, "engine-tool: waldump %s: %s\n", a->dir, eng_strerror(st));
        return EXIT_ERROR;
    }
    wd_plan p = {.seg_size = 0, .start = 0, .from_redo = 0, .size_known = 1};
    if (plan_walk(a, d, &p)) {
        insp_close(d);
        return EXIT_ERROR;
    }
    return (a->given & OPT_JSON) ? dump_json(a, d, &p) : dump_text(a, d, &p);
}
