/*
 * promises.c -- reading and printing the engines' promise tables
 * (promises.h): the lookup every reader shares, the JSON that crashtest
 * reads (stress --promises), the Markdown of docs/promises.md
 * (--promises_table), and the table's own check (PR1, PR3).
 */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "promises.h"

static const char *const kinds[] = {"data", "wal", "control", "dir", "any", NULL};

const char *st_promise_name(int promise) {
    return promise == ST_PROMISE_REPAIR ? "repair" : promise == ST_PROMISE_NONE ? "none" : "detect";
}

int st_open_options_value(const void *ctx, const char *name, char *buf, size_t cap) {
    const st_open_options *o = ctx;
    if (!strcmp(name, "sync_mode"))
        snprintf(buf, cap, "%s", o->sync_mode == 2 ? "off" : o->sync_mode == 1 ? "group" : "commit");
    else if (!strcmp(name, "data_checksums"))
        snprintf(buf, cap, "%d", o->data_checksums ? 1 : 0);
    else if (!strcmp(name, "sqlite_journal_mode"))
        snprintf(buf, cap, "%s", o->sqlite_journal_mode ? "delete" : "wal");
    else if (!strcmp(name, "sqlite_synchronous"))
        snprintf(buf, cap, "%s", o->sqlite_synchronous == 2 ? "extra" : o->sqlite_synchronous == 1 ? "normal" : "full");
    else if (!strcmp(name, "full_page_writes"))
        snprintf(buf, cap, "%d", o->full_page_writes ? 1 : 0);
    else if (!strcmp(name, "block_protection_bytes_per_key"))
        snprintf(buf, cap, "%d", o->block_protection_bytes_per_key);
    else if (!strcmp(name, "rocksdb_wal_recovery_mode"))
        snprintf(buf, cap, "%d", o->rocksdb_wal_recovery_mode);
    else
        return -1;
    return 0;
}

/* 1 if the N bytes at S are one of the '|'-separated values of LIST (N
 * bytes). */
static int value_listed(const char *list, size_t n, const char *v) {
    size_t vl = strlen(v);
    for (const char *c = list, *end = list + n; c < end;) {
        size_t k = strcspn(c, "|,");
        if (c + k > end) k = (size_t)(end - c);
        if (k == vl && !strncmp(c, v, vl)) return 1;
        c += k + 1;
    }
    return 0;
}

/* 1 if every option WHEN names holds one of its values; -1 if it names
 * one VALUE does not know. */
static int when_holds(const char *when, st_option_value_fn value, const void *ctx) {
    for (const char *c = when; *c; c += strcspn(c, ","), c += *c == ',') {
        size_t n = strcspn(c, ","), eq = strcspn(c, "=");
        if (eq >= n) return -1;
        char name[64], v[64];
        snprintf(name, sizeof name, "%.*s", (int)eq, c);
        if (value(ctx, name, v, sizeof v)) return -1;
        if (!value_listed(c + eq + 1, n - eq - 1, v)) return 0;
    }
    return 1;
}

const st_promise *st_promise_find(const st_promises *t, const char *cls, const char *kind, st_option_value_fn value,
                                  const void *ctx) {
    for (size_t i = 0; i < t->count; i++) {
        const st_promise *r = &t->rows[i];
        if (strcmp(r->fault_class, cls)) continue;
        if (strcmp(r->file_kind, "any") && (!kind || strcmp(r->file_kind, kind))) continue;
        if (when_holds(r->when, value, ctx) == 1) return r;
    }
    return NULL;
}

int st_promise_names(const st_promises *t, const char *cls) {
    for (size_t i = 0; i < t->count; i++)
        if (!strcmp(t->rows[i].fault_class, cls)) return 1;
    return 0;
}

int st_promise_door_serves(const st_promises *t, const char *cls) {
    for (size_t i = 0; t->door && t->door[i]; i++)
        if (!strcmp(t->door[i], cls)) return 1;
    return 0;
}

void st_promise_line(const st_promise *r, char *buf, size_t cap) {
    snprintf(buf, cap, "promise %s: class=%s file_kind=%s when=%s (%s)", st_promise_name(r->promise), r->fault_class,
             r->file_kind, r->when[0] ? r->when : "any", r->doc);
}

/* WHEN as a JSON object of value lists: {"name": ["v1", "v2"]}. */
static void when_json(const char *when, FILE *f) {
    fputc('{', f);
    for (const char *c = when; *c; c += strcspn(c, ","), c += *c == ',') {
        size_t n = strcspn(c, ","), eq = strcspn(c, "=");
        fprintf(f, "%s\"%.*s\": [", c == when ? "" : ", ", (int)eq, c);
        for (const char *v = c + eq + 1; v < c + n; v += strcspn(v, "|,"), v += *v == '|')
            fprintf(f, "%s\"%.*s\"", v == c + eq + 1 ? "" : ", ", (int)strcspn(v, "|,"), v);
        fputc(']', f);
    }
    fputc('}', f);
}

static void list_json(const char *const *list, FILE *f) {
    if (!list) {
        fputs("null", f);
        return;
    }
    fputc('[', f);
    for (size_t i = 0; list[i]; i++) fprintf(f, "%s\"%s\"", i ? ", " : "", list[i]);
    fputc(']', f);
}

void st_promises_json(const st_promises *t, const char *version, const char *(*default_of)(const char *name), FILE *f) {
    fprintf(f, "{\"engine\": \"%s\", \"version\": ", t->engine);
    if (version)
        json_fput_str(f, version);
    else
        fputs("null", f);
    fputs(", \"options\": ", f);
    list_json(t->options, f);
    fputs(", \"defaults\": {", f);
    for (size_t i = 0; t->options && t->options[i]; i++) {
        const char *d = default_of ? default_of(t->options[i]) : NULL;
        fprintf(f, "%s\"%s\": ", i ? ", " : "", t->options[i]);
        if (d)
            json_fput_str(f, d);
        else
            fputs("null", f);
    }
    fputc('}', f);
    fputs(", \"door\": ", f);
    list_json(t->door, f);
    fputs(", \"rows\": [", f);
    for (size_t i = 0; i < t->count; i++) {
        const st_promise *r = &t->rows[i];
        fprintf(f, "%s\n  {\"class\": \"%s\", \"file_kind\": \"%s\", \"when\": ", i ? "," : "", r->fault_class,
                r->file_kind);
        when_json(r->when, f);
        fprintf(f, ", \"promise\": \"%s\", \"synced_commit_survives\": %s, \"doc\": ", st_promise_name(r->promise),
                r->commit_survives < 0 ? "null"
                : r->commit_survives   ? "true"
                                       : "false");
        json_fput_str(f, r->doc);
        fputs(", \"says\": ", f);
        json_fput_str(f, r->says);
        fprintf(f, ", \"reported_as\": \"%s\"", r->as_corruption ? "corruption" : "error");
        fputs(", \"lead\": ", f);
        if (r->lead)
            json_fput_str(f, r->lead);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
}

void st_promises_markdown(const st_promises *t, const char *version, FILE *f) {
    fprintf(f, "### %s%s%s\n\n", t->engine, version ? " " : "", version ? version : "");
    if (t->door) {
        fputs("Through the door: ", f);
        for (size_t i = 0; t->door[i]; i++) fprintf(f, "%s`%s`", i ? ", " : "", t->door[i]);
        fputs(".\n\n", f);
    }
    fputs("| class | file kind | when | promise | synced commit survives | documentation |\n"
          "|---|---|---|---|---|---|\n",
          f);
    for (size_t i = 0; i < t->count; i++) {
        const st_promise *r = &t->rows[i];
        fprintf(f, "| `%s` | %s | ", r->fault_class, r->file_kind);
        if (!r->when[0]) fputs("any", f);
        for (const char *c = r->when; *c; c++) fprintf(f, "%s%s%c", c == r->when ? "`" : "", *c == '|' ? "\\" : "", *c);
        fprintf(f, "%s | %s%s | %s | %s: %s%s%s |\n", r->when[0] ? "`" : "", st_promise_name(r->promise),
                r->as_corruption ? " (as corruption)" : "",
                r->commit_survives < 0 ? ""
                : r->commit_survives   ? "yes"
                                       : "no",
                r->doc, r->says, r->lead ? "; open lead: " : "", r->lead ? r->lead : "");
    }
    fputc('\n', f);
}

static int listed(const char *const *list, const char *s, size_t n) {
    for (size_t i = 0; list && list[i]; i++)
        if (strlen(list[i]) == n && !strncmp(list[i], s, n)) return 1;
    return 0;
}

/* PR3 for one row: every option WHEN names is the table's. */
static int when_ok(const st_promises *t, const char *when) {
    for (const char *c = when; *c; c += strcspn(c, ","), c += *c == ',') {
        size_t n = strcspn(c, ","), eq = strcspn(c, "=");
        if (eq >= n || eq + 1 == n || !listed(t->options, c, eq)) return 0;
    }
    return 1;
}

/* PR1 for row I: a later row, or this one, of its class and kind (or
 * "any") matches any options. */
static int has_catch_all(const st_promises *t, size_t i) {
    const st_promise *r = &t->rows[i];
    for (size_t k = i; k < t->count; k++) {
        const st_promise *q = &t->rows[k];
        if (!strcmp(q->fault_class, r->fault_class) && !q->when[0] &&
            (!strcmp(q->file_kind, r->file_kind) || !strcmp(q->file_kind, "any")))
            return 1;
    }
    return 0;
}

int st_promises_check(const st_promises *t, int (*known_class)(const char *name), char *why, size_t cap) {
    for (size_t i = 0; i < t->count; i++) {
        const st_promise *r = &t->rows[i];
        const char *bad = !known_class(r->fault_class)                                     ? "no such fault class"
                          : !listed(kinds, r->file_kind, strlen(r->file_kind))             ? "no such file kind"
                          : r->promise < ST_PROMISE_DETECT || r->promise > ST_PROMISE_NONE ? "no such promise"
                          : !r->doc || (strncmp(r->doc, "https://", 8) && strncmp(r->doc, "docs/", 5)) || !r->says
                              ? "no page cited"
                          : !when_ok(t, r->when) ? "an option the table does not name"
                          : !has_catch_all(t, i) ? "no row for any options after it"
                                                 : NULL;
        if (bad) {
            snprintf(why, cap, "%s row %zu (%s %s %s): %s", t->engine, i, r->fault_class, r->file_kind, r->when, bad);
            return -1;
        }
    }
    for (size_t i = 0; t->door && t->door[i]; i++)
        if (!st_promise_names(t, t->door[i])) {
            snprintf(why, cap, "%s: the door serves %s, which no row names", t->engine, t->door[i]);
            return -1;
        }
    return 0;
}
