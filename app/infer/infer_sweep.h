/* infer_sweep: the checkpoints of a sweep directory (scripts/ablate.sh) for the
 * compare page; see infer_sweep.c. */
#ifndef HEADCOUNT_INFER_SWEEP_H
#define HEADCOUNT_INFER_SWEEP_H

#include <stddef.h>

/* The most distinct runs one scan keeps apart (then it refuses the directory). */
#define INFER_SWEEP_SCAN 64

/* Fills paths[0..n) with DIR/runs/NAME/model.ckpt of the first seed of every
 * finished (H, D) run of the sweep in dir, ordered by H, then D, each a
 * malloc'd string the caller frees; returns n (1..max), or -1 with the reason
 * in err (no runs/ directory, no finished run, more than max). others: the
 * page's other models, so that max + others is the page's limit, which the
 * message names. */
int infer_sweep_ckpts(const char *dir, char **paths, int max, int others, char *err,
                      size_t errlen);

#endif
