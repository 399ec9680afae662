/* bench_bf16_path: which code runs a benchmark's bf16 products, chosen as ./train
 * chooses it (HEADCOUNT_BF16=emulate: the emulation even where the build has the
 * instruction, kernels/bf16.h), and the line that says which. Header-only, since each
 * benchmark is built from one .c file. */
#ifndef HEADCOUNT_BENCH_BF16_PATH_H
#define HEADCOUNT_BENCH_BF16_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"

static inline Bf16Path bench_bf16_path(void)
{
    const char *v = getenv("HEADCOUNT_BF16");
    if (!v || !*v)
        return BF16_AUTO;
    if (strcmp(v, "emulate") != 0) {
        fprintf(stderr, "bench: HEADCOUNT_BF16='%s': expected 'emulate' or nothing\n", v);
        exit(2);
    }
    return BF16_EMULATED;
}

/* "bf16 products: ..." and a newline on f. */
static inline void bench_bf16_say(FILE *f)
{
    Bf16Path path = bench_bf16_path();
    if (!bf16_emulated(path))
        fprintf(f, "bf16 products: the VDPBF16PS instruction (the build targets AVX512-BF16)\n");
    else
        fprintf(f, "bf16 products: emulated (%s): the same bits as the instruction, %s "
                "(docs/matmul.md)\n", BF16_NATIVE ? "HEADCOUNT_BF16=emulate"
                                                  : "the build does not target AVX512-BF16",
                bf16_emulation_fast() ? BF16_EMULATION_COST : BF16_EMULATION_STEPWISE_COST);
}

#endif
