/* evaluate: the loss of a model over a whole token sequence.
 *
 * The sequence is scored in consecutive non-overlapping windows of T inputs:
 * window k has inputs ids[kT .. kT+T-1] and targets ids[kT+1 .. kT+T]; the last
 * window may be shorter. All n - 1 predicted tokens count once, and the mean is
 * summed in order in double, so the result is the same for any batching and
 * thread count. */
#ifndef HEADCOUNT_EVALUATE_H
#define HEADCOUNT_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "gpt.h"

/* a: activations with capacity (B, m->cfg.T); windows go through B at a time.
 * ids has n >= 2 tokens. Fills *mean_loss and, if count is not NULL, *count
 * (= n - 1). opt may be NULL. token_loss, if not NULL, receives the loss of
 * predicting ids[i+1] at index i (n - 1 values). */
int eval_sequence(const Model *m, Activations *a, const uint8_t *ids, size_t n,
                  const PassOptions *opt, double *mean_loss, size_t *count, float *token_loss,
                  char *err, size_t errlen);

#endif
