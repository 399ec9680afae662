/* bpe_hash: the hashing that data/bpe.c (learning) and data/bpe_encode.c
 * (encoding) share: pair keys and byte-string hashes. Private to those two. */
#ifndef HEADCOUNT_BPE_HASH_H
#define HEADCOUNT_BPE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* An empty slot of a pair table: no key, as ids are below 32768. */
#define PAIR_EMPTY 0xffffffffu

/* The pair (l, r) as one 32-bit key. */
static inline uint32_t pair_key(unsigned l, unsigned r)
{
    return (uint32_t)l << 16 | r;
}

/* A pair table's slot for a key (Fibonacci hashing: bits 32 to 63 of k times 2^64 / phi). */
static inline size_t mix32(uint32_t k)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 32);
}

/* FNV-1a over a chunk's bytes, its length mixed in and the high bits folded
 * down, since tables index with the low bits. */
static inline uint64_t hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

#endif
