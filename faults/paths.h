/*
 * paths.h -- the one rule for naming a file of the database directory,
 * shared by the power-loss journal (journal.c) and the door at the POSIX
 * boundary (door.c): a path below the directory, normalized, and whether
 * a path lies under it.  Header-only, so the door, which includes no
 * other file of the library, shares it with the journal.
 */
#ifndef FAULTS_PATHS_H
#define FAULTS_PATHS_H

#include <stddef.h>
#include <string.h>

/* Normalize REST (a path below the database directory) into OUT: no empty
 * or "." components, ".." resolved, "." for the directory itself.
 * Returns 0, or -1 if it climbs out of the directory or does not fit. */
static inline int flt_path_norm_rel(const char *rest, char *out, size_t cap) {
    size_t n = 0;
    const char *s = rest;
    while (*s) {
        while (*s == '/') s++;
        if (!*s) break;
        const char *e = strchr(s, '/');
        size_t cl = e ? (size_t)(e - s) : strlen(s);
        if (cl == 1 && s[0] == '.') {
            /* skip */
        } else if (cl == 2 && s[0] == '.' && s[1] == '.') {
            if (n == 0) return -1;
            while (n > 0 && out[n - 1] != '/') n--;
            if (n > 0) n--; /* the slash */
        } else {
            if (n + (n ? 1 : 0) + cl + 1 > cap) return -1;
            if (n) out[n++] = '/';
            memcpy(out + n, s, cl);
            n += cl;
        }
        s += cl;
    }
    if (n == 0) {
        if (cap < 2) return -1;
        out[n++] = '.';
    }
    out[n] = 0;
    return 0;
}

/* If PATH starts with directory PREFIX, the rest (starting at '/' or
 * NUL); else NULL. */
static inline const char *flt_path_under(const char *path, const char *prefix) {
    size_t pl = strlen(prefix);
    if (strncmp(path, prefix, pl) != 0) return NULL;
    if (path[pl] != '/' && path[pl] != 0 && !(pl > 0 && prefix[pl - 1] == '/')) return NULL;
    return path + pl;
}

#endif
