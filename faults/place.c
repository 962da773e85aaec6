/*
 * place.c -- the regions damage is aimed at, read from the bytes by the
 * engine's own format definitions (place.h has the names and what each
 * covers; engine/format.h draws the layouts).  No draws and no I/O here:
 * inject.c reads the bytes and draws over what these functions find, so
 * the same bytes always give the same regions.
 */
#include <string.h>

#include "format.h"
#include "place.h"

static uint32_t clamp32(uint32_t v, uint32_t lo, uint32_t hi) { return v < lo ? lo : v > hi ? hi : v; }
static uint32_t min32(uint32_t a, uint32_t b) { return a < b ? a : b; }

/* ---- pages ---- */

int flt_page_spans(const uint8_t *p, size_t ps, flt_span out[FLT_PAGE_SPANS]) {
    int n = 0;
    uint32_t end = (uint32_t)ps;
#define SPAN(name, a, b) \
    if ((b) > (a)) out[n++] = (flt_span){name, (a), (b)}
    SPAN("header", 0, PAGE_HDR);
    switch (p[PH_TYPE_OFF]) {
    case PAGE_LEAF:
    case PAGE_INTERNAL: {
        uint32_t base = p[PH_TYPE_OFF] == PAGE_LEAF ? LEAF_SLOT_BASE(end) : PAGE_HDR;
        uint32_t lower = clamp32(fmt_get16(p + PH_LOWER_OFF), base, end);
        uint32_t upper = clamp32(fmt_get16(p + PH_UPPER_OFF), lower, end);
        SPAN("hints", PAGE_HDR, base);
        SPAN("slots", base, lower);
        SPAN("free", lower, upper);
        SPAN("cells", upper, end);
        break;
    }
    case PAGE_META: {
        uint32_t e = META_CLOG_OFF + 4u * min32(fmt_get32(p + META_OFF_CLOGN), META_CLOG_CAP(end));
        SPAN("meta", PAGE_HDR, e);
        SPAN("free", e, end);
        break;
    }
    case PAGE_CLOG: SPAN("clog", PAGE_HDR, end); break;
    case PAGE_OVERFLOW: {
        uint32_t e = PAGE_HDR + min32(fmt_get32(p + PH_AUX_OFF), end - PAGE_HDR);
        SPAN("overflow", PAGE_HDR, e);
        SPAN("free", e, end);
        break;
    }
    case PAGE_FREE: {
        uint32_t e = PAGE_HDR + 4u * min32(fmt_get32(p + PH_AUX_OFF), FREE_TRUNK_CAP(end));
        SPAN("trunk", PAGE_HDR, e);
        SPAN("free", e, end);
        break;
    }
    default: SPAN("free", PAGE_HDR, end); break; /* never written, or a type nobody reads */
    }
#undef SPAN
    return n;
}

const char *flt_page_region_at(const uint8_t *p, size_t ps, size_t byte) {
    flt_span s[FLT_PAGE_SPANS];
    int n = flt_page_spans(p, ps, s);
    for (int i = 0; i < n; i++)
        if (byte >= s[i].lo && byte < s[i].hi) return s[i].region;
    return s[n - 1].region;
}

/* ---- the log ---- */

static const char *const wal_names[FLT_WR_COUNT] = {"block_header", "sector_trailer", "record_header", "record_payload",
                                                    "padding"};

const char *flt_wal_region_name(int r) { return r >= 0 && r < FLT_WR_COUNT ? wal_names[r] : NULL; }

static int is_data(uint64_t off) { return off % WAL_BLOCK >= WAL_BLOCK_HDR && off % WAL_SECTOR < WAL_SECTOR_DATA; }

/* The first record byte at or after OFF (past a trailer, past a block
 * header): where the writer puts the next byte (wal.c buf_put). */
static uint64_t data_at(uint64_t off) {
    for (;;) {
        if (off % WAL_SECTOR >= WAL_SECTOR_DATA)
            off += WAL_SECTOR - off % WAL_SECTOR;
        else if (off % WAL_BLOCK < WAL_BLOCK_HDR)
            off += WAL_BLOCK_HDR - off % WAL_BLOCK;
        else
            return off;
    }
}

/* The position right after K record bytes that start at POS (a record
 * byte): the writer's end_raw. */
static uint64_t data_adv(uint64_t pos, uint64_t k) {
    while (k) {
        pos = data_at(pos);
        uint64_t c = WAL_SECTOR_DATA - pos % WAL_SECTOR;
        if (c > k) c = k;
        pos += c;
        k -= c;
    }
    return pos;
}

static uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

/* Label the record bytes of [A, B) that lie in the buffer V. */
static void label(uint8_t *lab, uint64_t lo, uint64_t n, uint64_t a, uint64_t b, uint8_t v) {
    if (a < lo) a = lo;
    if (b > lo + n) b = lo + n;
    for (uint64_t o = a; o < b; o++)
        if (is_data(o)) lab[o - lo] = v;
}

/* Copy the K record bytes from POS into OUT; 0 if they run past the buffer. */
static int read_data(const uint8_t *buf, uint64_t lo, uint64_t n, uint64_t pos, uint8_t *out, size_t k) {
    for (size_t i = 0; i < k; i++, pos++) {
        pos = data_at(pos);
        if (pos < lo || pos >= lo + n) return 0;
        out[i] = buf[pos - lo];
    }
    return 1;
}

size_t flt_wal_label(const uint8_t *buf, uint64_t lo, uint64_t n, uint64_t seg_base, uint8_t *lab, flt_wal_rec *recs,
                     size_t cap) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t o = lo + i;
        lab[i] = o % WAL_BLOCK < WAL_BLOCK_HDR       ? FLT_WR_BLOCK_HEADER
                 : o % WAL_SECTOR >= WAL_SECTOR_DATA ? FLT_WR_SECTOR_TRAILER
                                                     : FLT_WR_PADDING;
    }
    /* The first block whose header is its own (magic, LSN) and in which a
     * record starts: wb_cont record bytes continue an earlier one. */
    uint64_t pos = UINT64_MAX;
    for (uint64_t b = lo; b + WAL_BLOCK_HDR <= lo + n && pos == UINT64_MAX; b += WAL_BLOCK) {
        const uint8_t *h = buf + (b - lo);
        if (fmt_get16(h + WB_MAGIC_OFF) != WB_MAGIC || fmt_get64(h + WB_LSN_OFF) != seg_base + b) continue;
        uint32_t cont = fmt_get16(h + WB_CONT_OFF);
        if (cont >= WAL_BLOCK_PAYLOAD) continue;
        uint64_t e = data_adv(b + WAL_BLOCK_HDR, cont);
        label(lab, lo, n, b + WAL_BLOCK_HDR, e, FLT_WR_RECORD_PAYLOAD);
        pos = data_at(align8(e));
    }
    size_t nrec = 0;
    while (pos < lo + n) {
        uint8_t h[WAL_REC_HDR];
        if (!read_data(buf, lo, n, pos, h, sizeof h)) break;
        uint32_t len = fmt_get32(h + XL_LEN_OFF);
        uint8_t type = h[XL_TYPE_OFF];
        /* W1's end of the log: a header that is not this record's own. */
        if (len < WAL_REC_HDR || len - WAL_REC_HDR > WAL_MAX_RECORD || type < 1 || type > WAL_REC_TYPE_MAX ||
            fmt_get64(h + XL_LSN_OFF) != seg_base + pos)
            break;
        flt_wal_rec r = {pos, data_adv(pos, WAL_REC_HDR), data_adv(pos, len)};
        label(lab, lo, n, r.start, r.hdr_end, FLT_WR_RECORD_HEADER);
        label(lab, lo, n, r.hdr_end, r.end, FLT_WR_RECORD_PAYLOAD);
        if (recs && nrec < cap) recs[nrec] = r;
        nrec++;
        pos = data_at(align8(r.end));
    }
    return nrec;
}

/* ---- blocks ---- */

static const char *const block_names[FLT_BC_COUNT] = {"meta",      "root",         "interior", "leaf",
                                                      "clog",      "overflow",     "trunk",    "hwm_below",
                                                      "hwm_above", "last_written", "file_end", "since_redo"};

const char *flt_block_class_name(int c) { return c >= 0 && c < FLT_BC_COUNT ? block_names[c] : NULL; }

int flt_block_type_class(const uint8_t *hdr, uint64_t block, uint64_t root) {
    switch (hdr[PH_TYPE_OFF]) {
    case PAGE_META: return FLT_BC_META;
    case PAGE_LEAF:
    case PAGE_INTERNAL:
        if (block == root) return FLT_BC_ROOT;
        return hdr[PH_TYPE_OFF] == PAGE_LEAF ? FLT_BC_LEAF : FLT_BC_INTERIOR;
    case PAGE_CLOG: return FLT_BC_CLOG;
    case PAGE_OVERFLOW: return FLT_BC_OVERFLOW;
    case PAGE_FREE: return FLT_BC_TRUNK;
    default: return -1;
    }
}

const char *flt_page_type_name(const uint8_t *hdr, uint64_t block, uint64_t root) {
    int c = flt_block_type_class(hdr, block, root);
    return c >= 0 ? flt_block_class_name(c) : "unused";
}
