/*
 * version.h -- what --version prints in every program (stress, powerloss,
 * engine-tool): the tree's `git describe` and the build's options.  The
 * Makefile passes PROJECT_VERSION and PROJECT_BUILD to the few objects
 * that include this header (and rebuilds them when either changes: see
 * $(BUILD)/version.txt); a build without make says so.
 */
#ifndef COMMON_VERSION_H
#define COMMON_VERSION_H

#include <stdio.h>

#ifndef PROJECT_VERSION
#define PROJECT_VERSION "unknown (built without the Makefile)"
#endif
#ifndef PROJECT_BUILD
#define PROJECT_BUILD "unknown"
#endif

/* "PROG git DESCRIBE\nbuild: FLAGS[ mutant NAME]\n" on F. */
static inline void version_print(FILE *f, const char *prog) {
    fprintf(f, "%s git %s\nbuild: %s", prog, PROJECT_VERSION, PROJECT_BUILD);
#ifdef ENG_MUTANT
    fprintf(f, "; planted bug %s (tests/mutants.txt)", ENG_MUTANT);
#endif
    fputc('\n', f);
}

#endif
