/* rng: the project's only source of randomness.
 *
 * A small splitmix64 generator whose whole state is one uint64, so a checkpoint
 * can store it exactly. Every consumer (init, batches, dropout, sampling, corpus
 * generation) owns its own Rng, seeded from --seed and a stream number, so that
 * drawing more numbers in one place never shifts another. rng_hash gives a
 * counter-based value for places that must be random yet split across threads
 * (dropout masks): the value depends only on its inputs, never on call order. */
#ifndef HEADCOUNT_RNG_H
#define HEADCOUNT_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t state;
} Rng;

/* The fixed stream numbers: one per consumer, so their sequences never overlap. */
enum {
    RNG_STREAM_INIT = 1,
    RNG_STREAM_BATCH = 2,
    RNG_STREAM_DROPOUT = 3,
    RNG_STREAM_SAMPLE = 4,
    RNG_STREAM_CORPUS = 5,
    RNG_STREAM_HEADS = 6,
    RNG_STREAM_EVAL = 7
};

void rng_init(Rng *rng, uint64_t seed, uint64_t stream);
uint64_t rng_u64(Rng *rng);
/* Uniform in [0, 1) with 24 random bits (exactly representable as float). */
float rng_uniform(Rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform_double(Rng *rng);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(Rng *rng, uint64_t n);
/* Standard normal (Box-Muller; one value per call, so the state advances by 2). */
double rng_normal(Rng *rng);
/* Counter-based: a well-mixed 64-bit value of (key, a, b). */
uint64_t rng_hash(uint64_t key, uint64_t a, uint64_t b);

#endif
