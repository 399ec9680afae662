/* batch: deterministic training batches whose position can be saved.
 *
 * Each batch is B windows of T + 1 consecutive tokens at offsets drawn
 * uniformly from [0, len - T - 1] by a seeded Rng; inputs are the first T
 * tokens of a window, targets the last T. The whole position is the Rng state,
 * which a checkpoint stores to resume the exact sequence. */
#ifndef HEADCOUNT_BATCH_H
#define HEADCOUNT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "data/bpe.h"
#include "util/rng.h"

typedef struct {
    Rng rng;
} BatchSampler;

void batch_init(BatchSampler *s, uint64_t seed, uint64_t stream);
/* ids[0..len) with len >= T + 1; inputs and targets are [B][T]. */
void batch_next(BatchSampler *s, const TokenId *ids, size_t len, int B, int T, int *inputs,
                int *targets);
/* The offsets starts[B] of the windows the next batch_next(s, ids, len, B, T, ...)
 * will take, without moving s. */
void batch_peek(const BatchSampler *s, size_t len, int B, int T, size_t *starts);

#endif
