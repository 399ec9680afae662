/* evaluate: the loss of a model over a whole token sequence.
 *
 * The sequence is scored in consecutive non-overlapping windows of T inputs:
 * window k has inputs ids[kT .. kT+T-1] and targets ids[kT+1 .. kT+T]; the last
 * window may be shorter. All n - 1 predicted tokens count once, and the mean is
 * summed in order in double, so the result is the same for any batching and
 * thread count. Token ids are uint16_t: data/bpe.h's TokenId, which this layer
 * cannot include (trainer/ckpt.c checks that the two agree). */
#ifndef HEADCOUNT_EVALUATE_H
#define HEADCOUNT_EVALUATE_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt.h"

/* a: activations with capacity (B, m->cfg.T); windows go through B at a time.
 * ids has n >= 2 tokens. Fills *mean_loss and, if count is not NULL, *count
 * (= n - 1). opt may be NULL. token_loss, if not NULL, receives the loss of
 * predicting ids[i+1] at index i (n - 1 values). */
int eval_sequence(const Model *m, Activations *a, const uint16_t *ids, size_t n,
                  const PassOptions *opt, double *mean_loss, size_t *count, float *token_loss,
                  char *err, size_t errlen);

/* The same, checking *stop (when not NULL) before each batch of windows: once it
 * is non-zero, returns 1 without a result, so a program can honour a signal in a
 * long evaluation. 0 and -1 as above. */
int eval_sequence_until(const Model *m, Activations *a, const uint16_t *ids, size_t n,
                        const PassOptions *opt, double *mean_loss, size_t *count,
                        float *token_loss, const volatile int *stop, char *err, size_t errlen);

/* Bits per byte (docs/tokenizer.md): the total nats over the predicted tokens,
 * divided by ln 2 and by the bytes those tokens stand for. From their mean
 * loss it is loss x (tokens / bytes) / ln 2, which is exactly loss / ln 2 when
 * every token is one byte (tokens = bytes). */
double eval_bpb(double mean_loss, size_t tokens, size_t bytes);

#endif
