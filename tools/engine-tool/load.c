/*
 * load.c -- engine-tool load and check: keys k000000000000000.. with
 * values derived from (index, seed), written one commit each, then proven
 * present exactly 0..m-1 with those values.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "common/rng.h"
#include "tool.h"

/* ---- keys and values -------------------------------------------------------- */

/* The value load writes for key INDEX: LEN bytes of a splitmix64 stream
 * seeded by (INDEX, SEED).  Deterministic; check recomputes it. */
void value_for(uint64_t index, uint64_t seed, uint8_t *buf, size_t len) {
    uint64_t state = (index * RNG_GOLDEN) ^ seed;
    for (size_t off = 0; off < len; off += 8) {
        uint64_t r = rng_next(&state);
        size_t n = len - off < 8 ? len - off : 8;
        memcpy(buf + off, &r, n);
    }
}

/* The one key printer of the tool (its rule in tool.h). */
const char *escape_key(const uint8_t *k, size_t len, size_t maxshow, char *out) {
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

/* ---- load ------------------------------------------------------------------------ */

int cmd_load(const tool_args *a) {
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
    if ((a->given & (OPT_PAGE_SIZE | OPT_NO_CHECKSUMS | OPT_WAL_SEGMENT_SIZE)) && eng_get_stats(db, &s) == ENG_OK) {
        if ((a->given & OPT_PAGE_SIZE) && s.page_size != a->page_size)
            fprintf(stderr,
                    "engine-tool: note: %s already has page size %" PRIu32 "; --page-size %" PRIu32 " ignored\n",
                    a->dir, s.page_size, a->page_size);
        if ((a->given & OPT_NO_CHECKSUMS) && s.data_checksums)
            fprintf(stderr,
                    "engine-tool: note: %s already has data checksums; "
                    "--no-data-checksums ignored\n",
                    a->dir);
        if ((a->given & OPT_WAL_SEGMENT_SIZE) && s.wal_segment_size != a->wal_segment_size)
            fprintf(stderr,
                    "engine-tool: note: %s already has WAL segments of %" PRIu64 " bytes; --wal-segment-size %" PRIu64
                    " ignored\n",
                    a->dir, s.wal_segment_size, a->wal_segment_size);
    }
    for (uint64_t i = 0; i < a->keys; i++) {
        char key[KEY_LEN + 1];
        key_format(i, key);
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
    printf("loaded %" PRIu64 " keys, last_seq=%" PRIu64 " durable_seq=%" PRIu64 "\n", a->keys, last_seq, durable_seq);
    return EXIT_OK;
}

/* ---- check -------------------------------------------------------------------- */

/* Where check's problem lines go: stdout, or (--json) a buffer that
 * becomes the document's "problems" array. */
static FILE *check_out;

typedef struct check_state {
    unsigned wrong, gaps, corrupt, extra;
    eng_corruption last; /* last report printed, to print each once */
    /* A data file shorter than the high-water mark: its whole blocks and
     * the mark (whole < hwm), and whether a key read there was shown. */
    uint64_t whole, hwm;
    int short_key_shown;
} check_state;

/* A data file cut short of control's high-water mark is one problem, not
 * one all-zero page per missing block (verify reports it the same way):
 * said once, before the keys, as a report line. */
static void check_file_length(eng_db *db, check_state *cs) {
    eng_stats s;
    memset(&s, 0, sizeof s);
    if (eng_get_stats(db, &s) != ENG_OK || !s.page_size) return;
    uint64_t whole = s.data_file_bytes / s.page_size;
    if (whole >= s.high_water_mark) return;
    cs->whole = whole;
    cs->hwm = s.high_water_mark;
    eng_corruption r = {.layer = ENG_LAYER_ZERO_PAGE,
                        .file = "data",
                        .block = (int64_t)whole,
                        .offset = (int64_t)(whole * s.page_size),
                        .entry = -1,
                        .expected = s.high_water_mark,
                        .found = whole};
    snprintf(r.detail, sizeof r.detail,
             "the data file is shorter than control says (%" PRIu64 " blocks, mark %" PRIu64 ")", whole,
             s.high_water_mark);
    print_report(check_out, &r);
}

/* A read of WHAT failed on corruption: print the report, unless it is the
 * one just printed (every key of a corrupt leaf reports the same page) or
 * a block the short data file lost (said once, by check_file_length). */
static void check_corruption(eng_db *db, const char *what, check_state *cs) {
    eng_corruption r;
    memset(&r, 0, sizeof r);
    int have = eng_last_corruption(db, &r);
    if (have && cs->whole < cs->hwm && r.layer == ENG_LAYER_ZERO_PAGE && strcmp(r.file, "data") == 0 &&
        r.block >= (int64_t)cs->whole && r.block < (int64_t)cs->hwm) {
        cs->corrupt++;
        if (!cs->short_key_shown)
            fprintf(check_out, "unreadable: key=%s (in the missing part of the data file)\n", what);
        cs->short_key_shown = 1;
        return;
    }
    if (cs->corrupt++ > 0 && have && r.layer == cs->last.layer && r.block == cs->last.block &&
        strcmp(r.file, cs->last.file) == 0 && strcmp(r.detail, cs->last.detail) == 0)
        return;
    if (cs->corrupt > 100 * MAX_REPORTED) return;
    fprintf(check_out, "unreadable: key=%s\n", what);
    if (have) {
        print_report(check_out, &r);
        cs->last = r;
    } else {
        fprintf(check_out, "corruption: (no report recorded)\n");
    }
}

/* Keys at or above index N with the "k" prefix must not exist. */
static int check_no_extra(eng_db *db, const char *dir, uint64_t n, check_state *cs) {
    char lower[KEY_LEN + 2], kbuf[4 * SHOW_KEY_BYTES + 4];
    size_t lower_len = KEY_LEN;
    if (n < KEY_SPACE) {
        key_format(n, lower);
    } else { /* every key of the convention is below N: look past the last one */
        key_format(KEY_SPACE - 1, lower);
        lower_len = KEY_LEN + 1;
    }
    eng_iter_options io = {lower, lower_len, "l", 1, NULL};
    eng_iter *it = NULL;
    int st = eng_iter_open(db, &io, &it);
    if (st == ENG_OK) {
        for (st = eng_iter_first(it); st == ENG_OK; st = eng_iter_next(it)) {
            size_t kl;
            const void *k = eng_iter_key(it, &kl);
            if (cs->extra++ < MAX_REPORTED)
                fprintf(check_out, "extra key: key=%s (only %" PRIu64 " keys were loaded)\n",
                        escape_key(k, kl, SHOW_KEY_BYTES, kbuf), n);
        }
        eng_iter_close(it);
    }
    if (st == ENG_NOTFOUND || st == ENG_OK) return 0;
    if (st == ENG_CORRUPTION) {
        check_corruption(db, "keys beyond the loaded range", cs);
        return 0;
    }
    fprintf(stderr, "engine-tool: check %s: scanning for extra keys: %s\n", dir, eng_strerror(st));
    return EXIT_ERROR;
}

int cmd_check(const tool_args *a) {
    uint64_t vsize = (a->given & OPT_VALUE_SIZE) ? a->value_size : DEFAULT_VALUE_SIZE;
    uint8_t *want = malloc(vsize ? vsize : 1);
    if (want == NULL) {
        fprintf(stderr, "engine-tool: check: out of memory\n");
        return EXIT_ERROR;
    }
    int json = (a->given & OPT_JSON) != 0;
    char *pbuf = NULL;
    size_t plen = 0;
    check_out = json ? open_memstream(&pbuf, &plen) : stdout;
    if (check_out == NULL) {
        free(want);
        fprintf(stderr, "engine-tool: check: out of memory\n");
        return EXIT_ERROR;
    }
    eng_db *db;
    int rc = tool_open(a, TOOL_READ, check_out, &db);
    if (rc) {
        free(want);
        if (json) {
            fclose(check_out);
            printf("{\"opened\": false, \"problems\": ");
            json_lines(stdout, pbuf, plen);
            printf("}\n");
            free(pbuf);
        }
        return rc;
    }

    check_state cs;
    memset(&cs, 0, sizeof cs);
    check_file_length(db, &cs);
    eng_buf got = {NULL, 0, 0};
    uint64_t leading = 0, present = 0;
    int64_t first_missing = -1;
    int leading_done = 0;
    for (uint64_t i = 0; i < a->keys && rc == 0; i++) {
        char key[KEY_LEN + 1];
        key_format(i, key);
        int st = eng_get(db, key, KEY_LEN, &got);
        if (st == ENG_NOTFOUND) {
            if (first_missing < 0) first_missing = (int64_t)i;
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
            if (cs.gaps++ < MAX_REPORTED) {
                char missing[KEY_LEN + 1];
                key_format((uint64_t)first_missing, missing);
                fprintf(check_out, "gap: key=%s is missing but key=%s is present\n", missing, key);
            }
        } else if (!leading_done) {
            leading = i + 1;
        }
        value_for(i, a->seed, want, vsize);
        if (got.len != vsize) {
            if (cs.wrong++ < MAX_REPORTED)
                fprintf(check_out, "wrong value: key=%s length %zu, expected %" PRIu64 "\n", key, got.len, vsize);
        } else if (vsize && memcmp(got.data, want, vsize) != 0) {
            size_t d = 0;
            while (((const uint8_t *)got.data)[d] == want[d]) d++;
            if (cs.wrong++ < MAX_REPORTED)
                fprintf(check_out, "wrong value: key=%s differs from the expected value at byte %zu\n", key, d);
        }
    }
    eng_buf_free(&got);
    free(want);
    if (rc == 0) rc = check_no_extra(db, a->dir, a->keys, &cs);

    int st = eng_close(db);
    if (st != ENG_OK && rc == 0) {
        explain_failure(stdout, "close", a->dir, st, NULL);
        rc = status_exit(st);
    }
    if (json) {
        fclose(check_out);
        int failed = cs.wrong || cs.gaps || cs.corrupt || cs.extra || cs.whole < cs.hwm;
        printf("{\"opened\": true, \"keys\": %" PRIu64 ", \"present\": %" PRIu64 ", \"present_total\": %" PRIu64
               ", \"wrong_values\": %u, \"gaps\": %u, \"corrupt_reads\": %u, \"extra_keys\": %u, \"complete\": %s, "
               "\"result\": \"%s\", \"problems\": ",
               a->keys, leading, present, cs.wrong, cs.gaps, cs.corrupt, cs.extra, rc ? "false" : "true",
               rc       ? "error"
               : failed ? "failed"
                        : "ok");
        json_lines(stdout, pbuf, plen);
        printf("}\n");
        free(pbuf);
        if (rc) return rc;
        return failed ? EXIT_PROBLEM : EXIT_OK;
    }
    printf("present=%" PRIu64 "\n", leading);
    if (rc) return rc;
    if (cs.wrong || cs.gaps || cs.corrupt || cs.extra || cs.whole < cs.hwm) {
        /* present=m counts only the unbroken run from key 0 (an unreadable
         * or missing key ends it); the keys found anywhere are another
         * count, named apart so the two never read as a contradiction. */
        printf("check: FAILED: %" PRIu64 " of %" PRIu64 " keys found, present=%" PRIu64
               " of them in the unbroken run from key 0, %u wrong values, "
               "%u gaps, %u corrupt reads, %u extra keys%s\n",
               present, a->keys, leading, cs.wrong, cs.gaps, cs.corrupt, cs.extra,
               cs.whole < cs.hwm ? ", the data file shorter than control says" : "");
        return EXIT_PROBLEM;
    }
    return EXIT_OK;
}
