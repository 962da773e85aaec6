/*
 * fiu_int.h -- what fiu.c (the engine's libfiu points) offers faults.c,
 * the open/close code above it (frame.h draws the order).  Nothing
 * outside faults/ includes it.  (Not "fiu.h": that is libfiu's.)
 */
#ifndef FAULTS_FIU_INT_H
#define FAULTS_FIU_INT_H

#include "frame.h"

int flt_fiu_setup(flt_ctx *f);            /* enable the points the options ask for */
void flt_fiu_teardown(flt_ctx *f);        /* disable them */
int flt_fiu_wanted(const flt_options *o); /* 1 if some libfiu point is asked for */

#endif
