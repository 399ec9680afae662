/* batch: random windows from a token array (see batch.h). */
#include "data/batch.h"

void batch_init(BatchSampler *s, uint64_t seed, uint64_t stream)
{
    rng_init(&s->rng, seed, stream);
}

void batch_next(BatchSampler *s, const TokenId *ids, size_t len, int B, int T, int *inputs,
                int *targets)
{
    for (int b = 0; b < B; b++) {
        size_t off = (size_t)rng_below(&s->rng, (uint64_t)(len - (size_t)T));
        for (int t = 0; t < T; t++) {
            inputs[b * T + t] = ids[off + t];
            targets[b * T + t] = ids[off + t + 1];
        }
    }
}
