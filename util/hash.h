/* hash: FNV-1a 64 (Fowler, Noll, Vo), the checksum of checkpoints and the
 * fingerprint of a training file. Incremental: pass the previous value as h,
 * starting from HASH_FNV_INIT. Not cryptographic: it catches damage, not forgery. */
#ifndef HEADCOUNT_HASH_H
#define HEADCOUNT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_INIT 0xcbf29ce484222325ULL

uint64_t hash_fnv1a(uint64_t h, const void *data, size_t n);

#endif
