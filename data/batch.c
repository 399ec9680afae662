/* batch: random windows from a token array (see batch.h). */
#include "data/batch.h"

void batch_init(BatchSampler *s, uint64_t seed, uint64_t stream)
{
    rng_init(&s->rng, seed, stream);
}

/* The offset of the next window: uniform in [0, len - T - 1]. */
static size_t draw(Rng *rng, size_t len, int T)
{
    return (size_t)rng_below(rng, (uint64_t)(len - (size_t)T));
}

void batch_peek(const BatchSampler *s, size_t len, int B, int T, size_t *starts)
{
    Rng rng = s->rng;
    for (int b = 0; b < B; b++)
        starts[b] = draw(&rng, len, T);
}

void batch_next(BatchSampler *s, const TokenId *ids, size_t len, int B, int T, int *inputs,
                int *targets)
{
    for (int b = 0; b < B; b++) {
        size_t off = draw(&s->rng, len, T);
        for (int t = 0; t < T; t++) {
            inputs[b * T + t] = ids[off + t];
            targets[b * T + t] = ids[off + t + 1];
        }
    }
}
