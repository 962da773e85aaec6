/*
 * dump_page.c -- engine-tool dump-page: one raw block of DIR/data decoded,
 * pageinspect style, with the engine's page decoders (inspect.h) and the
 * layout of format.h, also when the engine will not open the database.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "format.h"
#include "inspect.h"
#include "tool.h"

/* Read exactly LEN bytes at OFF.  Returns 0, or -1 with errno (0 = EOF). */
static int pread_full(int fd, void *buf, size_t len, uint64_t off) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) {
            errno = 0;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* ---- dump-page ---------------------------------------------------------------- */

/* Page size of a data file the engine would not open: the size at which
 * block 0 is a meta page with a matching checksum, else (checksums off)
 * the size at which block 1 claims to be block 1.  0 if neither. */
static uint32_t guess_page_size(int fd, uint64_t fsize) {
    static const uint32_t sizes[] = {4096, 8192, 16384};
    uint8_t *p = malloc(16384);
    uint32_t found = 0;
    if (p == NULL) return 0;
    for (size_t i = 0; i < 3 && !found; i++) {
        uint32_t ps = sizes[i];
        if (fsize < ps || pread_full(fd, p, ps, 0)) continue;
        if (ph_get_type(p) == PAGE_META && ph_get_checksum(p) != 0 && page_checksum(p, ps, 0) == ph_get_checksum(p))
            found = ps;
    }
    for (size_t i = 0; i < 3 && !found; i++) {
        uint32_t ps = sizes[i];
        if (fsize < 2ull * ps || fsize % ps || pread_full(fd, p, PAGE_HDR, ps)) continue;
        if (ph_get_block(p) == 1 && ph_get_type(p) != PAGE_ZERO && ph_get_type(p) <= PAGE_TYPE_MAX) found = ps;
    }
    free(p);
    return found;
}

static const char *type_name(int type) {
    const char *n = type <= PAGE_TYPE_MAX ? page_type_name(type) : NULL;
    return n ? n : "unknown";
}

static void dump_leaf_cells(const uint8_t *p) {
    char shown[4 * SHOW_KEY_BYTES + 4];
    unsigned n = ph_get_nslots(p);
    printf("slots:\n");
    printf("  %5s %7s %6s %5s %9s %-16s %10s %10s %4s %s\n", "slot", "offset", "size", "klen", "vlen", "value", "xmin",
           "xmax", "hint", "key");
    for (unsigned i = 0; i < n; i++) {
        leaf_cell c;
        char where[32];
        page_leaf_cell(p, i, &c);
        if (c.cflags & CELL_OVERFLOW)
            snprintf(where, sizeof where, "overflow(%" PRIu32 ")", c.ovfl);
        else
            snprintf(where, sizeof where, "inline");
        printf("  %5u %7u %6u %5u %9" PRIu32 " %-16s %10" PRIu64 " %10" PRIu64 "  0x%x %s\n", i, page_slot(p, i),
               c.size, c.klen, c.vlen, where, c.xmin, c.xmax, leaf_hint_get(p, i),
               escape_key(c.key, c.klen, SHOW_KEY_BYTES, shown));
    }
}

static void dump_internal_cells(const uint8_t *p) {
    char shown[4 * SHOW_KEY_BYTES + 4];
    unsigned n = ph_get_nslots(p);
    printf("slots:\n");
    printf("  %5s %7s %6s %5s %10s %s\n", "slot", "offset", "size", "klen", "child", "key");
    printf("  %5s %7s %6s %5s %10" PRIu32 " %s\n", "-", "-", "-", "-", ph_get_aux(p), "(leftmost: keys below slot 0)");
    for (unsigned i = 0; i < n; i++) {
        internal_cell c;
        page_internal_cell(p, i, &c);
        printf("  %5u %7u %6u %5u %10" PRIu32 " %s\n", i, page_slot(p, i), c.size, c.klen, c.child,
               escape_key(c.key, c.klen, SHOW_KEY_BYTES, shown));
    }
}

/* Print the page at BLOCK; returns EXIT_OK if it verifies, EXIT_PROBLEM if
 * not.  Only headers and fixed-offset fields are read from an unchecked
 * page; cells are decoded only after page_check_structure passed. */
static int dump_page(const uint8_t *p, uint32_t ps, uint64_t block, uint64_t hwm, int checksums) {
    uint64_t stored = ph_get_checksum(p);
    uint64_t computed = page_checksum(p, ps, block);
    int type = ph_get_type(p);

    if (!checksums && stored == 0)
        printf("checksum: 0x0 (data checksums off; computed 0x%016" PRIx64 ")\n", computed);
    else
        printf("checksum: stored 0x%016" PRIx64 " computed 0x%016" PRIx64 " (%s)\n", stored, computed,
               stored == computed ? "match" : "MISMATCH");
    printf("lsn: 0x%" PRIx64 "\n", ph_get_lsn(p));
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
        printf("verify: CORRUPT layer=%s entry=%" PRId32 " offset=%" PRId64 " expected=0x%" PRIx64 " found=0x%" PRIx64
               ": %s\n",
               eng_layer_name(pr.layer) ? eng_layer_name(pr.layer) : "unknown", pr.entry, pr.offset, pr.expected,
               pr.found, pr.detail);

    if (page_is_zero(p, ps)) return st == ENG_OK ? EXIT_OK : EXIT_PROBLEM;

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
        printf("  payload: %" PRIu32 " bytes%s\n", len, len > ps - PAGE_HDR ? " (MORE than the page holds)" : "");
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

/* --json: the page as one JSON object (the same fields as the lines; keys
 * as printable strings, LSNs in hex).  Returns as dump_page does. */
static int dump_page_json(const uint8_t *p, uint32_t ps, uint64_t block, uint64_t hwm, int hwm_known, int checksums,
                          uint64_t nblocks) {
    uint64_t stored = ph_get_checksum(p), computed = page_checksum(p, ps, block);
    int type = ph_get_type(p), is_zero = 0;
    page_problem pr;
    memset(&pr, 0, sizeof pr);
    int st = page_verify(p, ps, block, hwm, checksums, &is_zero, &pr);
    printf("{\"block\": %" PRIu64 ", \"page_size\": %" PRIu32 ", \"blocks_in_file\": %" PRIu64 ", ", block, ps,
           nblocks);
    if (hwm_known)
        printf("\"high_water_mark\": %" PRIu64 ", ", hwm);
    else
        printf("\"high_water_mark\": null, ");
    printf("\"data_checksums\": %s, \"checksum_stored\": \"0x%016" PRIx64 "\", \"checksum_computed\": \"0x%016" PRIx64
           "\", \"checksum_match\": %s,\n",
           checksums ? "true" : "false", stored, computed, stored == computed ? "true" : "false");
    printf(" \"lsn\": \"0x%" PRIx64 "\", \"header_block\": %" PRIu32
           ", \"type\": \"%s\", \"type_code\": %d, \"flags\": %u, "
           "\"nslots\": %u, \"lower\": %u, \"upper\": %u, \"frag\": %u, \"level\": %u, \"next\": %" PRIu32
           ", \"aux\": %" PRIu32 ",\n",
           ph_get_lsn(p), ph_get_block(p), type_name(type), type, ph_get_flags(p), ph_get_nslots(p), ph_get_lower(p),
           ph_get_upper(p), ph_get_frag(p), ph_get_level(p), ph_get_next(p), ph_get_aux(p));
    printf(" \"verify\": {\"ok\": %s, \"all_zero\": %s", st == ENG_OK ? "true" : "false", is_zero ? "true" : "false");
    if (st != ENG_OK) {
        printf(", \"layer\": ");
        json_fput_str(stdout, eng_layer_name(pr.layer) ? eng_layer_name(pr.layer) : "unknown");
        printf(", \"entry\": %" PRId32 ", \"offset\": %" PRId64 ", \"expected\": \"0x%" PRIx64
               "\", \"found\": \"0x%" PRIx64 "\", \"detail\": ",
               pr.entry, pr.offset, pr.expected, pr.found);
        json_fput_str(stdout, pr.detail);
    }
    printf("}");
    page_problem sp;
    memset(&sp, 0, sizeof sp);
    char shown[4 * SHOW_KEY_BYTES + 4];
    if (!page_is_zero(p, ps) && (type == PAGE_LEAF || type == PAGE_INTERNAL)) {
        if (page_check_structure(p, ps, &sp) != ENG_OK) {
            printf(",\n \"cells\": null, \"cells_not_decoded\": ");
            json_fput_str(stdout, sp.detail);
        } else {
            unsigned n = ph_get_nslots(p);
            printf(",\n \"cells\": [");
            for (unsigned i = 0; i < n; i++) {
                printf("%s\n  ", i ? "," : "");
                if (type == PAGE_LEAF) {
                    leaf_cell c;
                    page_leaf_cell(p, i, &c);
                    printf("{\"slot\": %u, \"offset\": %u, \"size\": %u, \"klen\": %u, \"vlen\": %" PRIu32
                           ", \"overflow\": %s, \"xmin\": %" PRIu64 ", \"xmax\": %" PRIu64 ", \"hint\": %u, \"key\": ",
                           i, page_slot(p, i), c.size, c.klen, c.vlen, c.cflags & CELL_OVERFLOW ? "true" : "false",
                           c.xmin, c.xmax, (unsigned)leaf_hint_get(p, i));
                    json_fput_str(stdout, escape_key(c.key, c.klen, SHOW_KEY_BYTES, shown));
                } else {
                    internal_cell c;
                    page_internal_cell(p, i, &c);
                    printf("{\"slot\": %u, \"offset\": %u, \"size\": %u, \"klen\": %u, \"child\": %" PRIu32
                           ", \"key\": ",
                           i, page_slot(p, i), c.size, c.klen, c.child);
                    json_fput_str(stdout, escape_key(c.key, c.klen, SHOW_KEY_BYTES, shown));
                }
                printf("}");
            }
            printf("]");
        }
    }
    printf("}\n");
    return st == ENG_OK ? EXIT_OK : EXIT_PROBLEM;
}

int cmd_dump_page(const tool_args *a) {
    int rc = require_dir(a->dir);
    if (rc) return rc;

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
    if (db) eng_close(db);
    if (a->given & OPT_PAGE_SIZE) {
        if (ps && ps != a->page_size)
            fprintf(stderr,
                    "engine-tool: note: the database says page size %" PRIu32 ", decoding with --page-size %" PRIu32
                    "\n",
                    ps, a->page_size);
        ps = a->page_size;
    } else if (st != ENG_OK) {
        ps = guess_page_size(fd, fsize);
        fprintf(stderr, "engine-tool: open %s: %s; ", a->dir, eng_strerror(st));
        if (!ps) {
            fprintf(stderr, "cannot tell the page size: pass --page-size\n");
            close(fd);
            return EXIT_ERROR;
        }
        fprintf(stderr,
                "page size %" PRIu32 " inferred from the data file, "
                "high-water mark unknown\n",
                ps);
    }
    if (ps < 4096 || ps > 16384 || (ps & (ps - 1))) {
        fprintf(stderr, "engine-tool: dump-page: implausible page size %" PRIu32 "\n", ps);
        close(fd);
        return EXIT_ERROR;
    }
    uint64_t nblocks = fsize / ps;
    if (a->block >= nblocks) {
        fprintf(stderr,
                "engine-tool: dump-page: block %" PRIu64 " is beyond the end of %s "
                "(%" PRIu64 " blocks of %" PRIu32 " bytes)\n",
                a->block, path, nblocks, ps);
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
    if (checksums < 0) checksums = ph_get_checksum(p) != 0;
    if (a->given & OPT_JSON) {
        rc = dump_page_json(p, ps, a->block, hwm, hwm_known, checksums, nblocks);
        free(p);
        return rc;
    }

    printf("page %" PRIu64 " of %s (page_size %" PRIu32 ", %" PRIu64 " blocks in file, "
           "high-water mark ",
           a->block, path, ps, nblocks);
    if (hwm_known)
        printf("%" PRIu64 ")\n", hwm);
    else
        printf("unknown: zero pages not judged)\n");
    rc = dump_page(p, ps, a->block, hwm, checksums);
    free(p);
    return rc;
}
