/* rng: splitmix64 (Steele, Lea & Flood 2014) and helpers built on it.
 * See rng.h for how streams are assigned. */
#include "util/rng.h"

#include <math.h>

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_init(Rng *rng, uint64_t seed, uint64_t stream)
{
    /* Two rounds of mixing so that nearby (seed, stream) pairs start far apart. */
    rng->state = mix64(mix64(seed) ^ (stream * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL));
}

uint64_t rng_u64(Rng *rng)
{
    rng->state += 0x9e3779b97f4a7c15ULL;
    return mix64(rng->state);
}

float rng_uniform(Rng *rng)
{
    return (float)(rng_u64(rng) >> 40) * (1.0f / 16777216.0f);
}

double rng_uniform_double(Rng *rng)
{
    return (double)(rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t rng_below(Rng *rng, uint64_t n)
{
    /* Rejection sampling: discard the top partial range so every value is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = rng_u64(rng);
    } while (x >= limit);
    return x % n;
}

double rng_normal(Rng *rng)
{
    /* Box-Muller; u1 in (0, 1] so the log is finite. */
    double u1 = 1.0 - rng_uniform_double(rng);
    double u2 = rng_uniform_double(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

uint64_t rng_hash(uint64_t key, uint64_t a, uint64_t b)
{
    return mix64(mix64(key ^ mix64(a + 0x9e3779b97f4a7c15ULL)) ^ (b * 0xd1b54a32d192ed03ULL));
}
