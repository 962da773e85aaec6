/*
 * json.h -- the one JSON string writer of the programs around the engine:
 * the fault ledger, the oracle's report and observation lines, the stress
 * driver's report and options, engine-tool's --json output.  Their readers
 * (the oracle's parsers, crashtest.py, tests) take any of them, so every
 * writer escapes by the same rule.
 *
 * The rule, byte by byte of a NUL-terminated C string:
 *   '"' and '\\'            a backslash, then the byte      \"  \\
 *   0x00-0x1f and 0x7f      \u00xx, lower-case hex          \u000a  \u007f
 *   everything else         as is (bytes >= 0x80 too)
 * Bytes >= 0x80 pass through because \u00XX would name the character
 * U+00XX, not the byte: a UTF-8 path stays readable, and a reader that
 * keeps the low byte of \u00XX (oracle/verdict.c) gets back what was
 * written.  Nothing but those escapes is written (no \n, \t, \/), so one
 * byte becomes at most JSON_ESC_MAX bytes.
 *
 * Header only, static inline; the engine never includes it.
 */
#ifndef COMMON_JSON_H
#define COMMON_JSON_H

#include <stddef.h>
#include <stdio.h>

#define JSON_ESC_MAX 6 /* the longest escape of one byte: \u00xx */

/* Byte C as the rule writes it into OUT (no NUL); returns its length,
 * 1 to JSON_ESC_MAX. */
static inline size_t json_escape_byte(unsigned char c, char out[JSON_ESC_MAX]) {
    static const char hex[] = "0123456789abcdef";
    if (c == '"' || c == '\\') {
        out[0] = '\\';
        out[1] = (char)c;
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        out[0] = '\\';
        out[1] = 'u';
        out[2] = '0';
        out[3] = '0';
        out[4] = hex[c >> 4];
        out[5] = hex[c & 15];
        return 6;
    }
    out[0] = (char)c;
    return 1;
}

/* S escaped (no quotes) into OUT[0..CAP), snprintf-style: returns the
 * length the whole body needs; when that is >= CAP the body was cut, but
 * only between escapes, so what was written is still a valid string
 * body.  OUT is NUL-terminated whenever CAP > 0.  S NULL is "". */
static inline size_t json_escape(char *out, size_t cap, const char *s) {
    size_t n = 0, fits = 1;
    for (; s && *s; s++) {
        char e[JSON_ESC_MAX];
        size_t k = json_escape_byte((unsigned char)*s, e);
        if (fits && n + k < cap) {
            for (size_t i = 0; i < k; i++) out[n + i] = e[i];
        } else if (fits) {
            fits = 0;
            if (cap) out[n] = 0;
        }
        n += k;
    }
    if (fits && cap) out[n] = 0;
    return n;
}

/* S on F as a JSON string, quotes included; S NULL is "". */
static inline void json_fput_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        char e[JSON_ESC_MAX];
        fwrite(e, 1, json_escape_byte((unsigned char)*s, e), f);
    }
    fputc('"', f);
}

#endif
