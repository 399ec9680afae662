/* bf16_weight: a weight matrix's bf16 copies, kept beside it (--precision bf16).
 *
 * bf16_forward rounds W[OC][IC] for its product on every call, and bf16_backward
 * rounds it again, by columns, for din. The weights change only in the optimizer's
 * update, so a Bf16Weight holds both roundings and is rewritten where W is: once in a
 * pass of its own (bf16_weight_write), then row by row inside AdamW's pass over the
 * weights (trainer/adamw.c: bf16_weight_part, bf16_weight_row), and the layers read
 * it (bf16_forward_with, bf16_backward_with) instead of rounding. The copies are
 * those the layers would make, bit for bit, in the layout the code that runs reads:
 *   BF16_COPY_FLOATS, for the emulation on the float32 kernels (bf16_emul.h):
 *     fwd[OC][K2] (K2 = 2 bf16_pairs(IC)), fwd[o][k ^ 1] = bf16(W[o][k]) as a float,
 *     the padding of an odd IC +0; bwd[2 bf16_pairs(OC)][IC], bwd[o ^ 1][i] =
 *     bf16(W[o][i]), a row of +0 for an odd OC; each row's smallest biased exponent
 *     (row_exp, the forward's exception test), and each column's (din's) as the
 *     minima of BF16_WEIGHT_PARTS blocks of rows (col_key, keys as bf16_emul_key),
 *     which din's product takes the least of.
 *   BF16_COPY_PANELS, for the instruction and the step-by-step emulation:
 *     fwd = bf16_pack_weights(W), bwd = bf16_pack_cols(W) (bf16.h).
 * Whoever writes W outside those calls makes the copy stale: its owner must write it
 * again (bf16_weight_write) before the next product reads it. */
#ifndef HEADCOUNT_BF16_WEIGHT_H
#define HEADCOUNT_BF16_WEIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16.h"

typedef enum { BF16_COPY_FLOATS, BF16_COPY_PANELS } Bf16CopyKind;

/* Blocks of rows a copy is written in; each keeps its own column minima, so blocks
 * can be written by different threads in any order. */
enum { BF16_WEIGHT_PARTS = 16 };

typedef struct Bf16Weight {
    const float *W;          /* the matrix copied; NULL: no copy (bf16_weight_find) */
    int OC, IC;
    Bf16CopyKind kind;
    uint32_t *fwd, *bwd;     /* floats' bits (FLOATS) or pairs (PANELS) */
    unsigned char *row_exp;  /* [OC]; FLOATS only */
    uint32_t *col_key;       /* [BF16_WEIGHT_PARTS][IC]; FLOATS only */
} Bf16Weight;

/* The kind the products of `path` read in this build. */
Bf16CopyKind bf16_copy_kind(Bf16Path path);

/* Memory for W[OC][IC]'s copies (zeroed; not yet written); -1 when out of memory
 * (c is then safe to free). */
int bf16_weight_init(Bf16Weight *c, const float *W, int OC, int IC, Bf16CopyKind kind);
/* Safe on a zeroed or freed Bf16Weight. */
void bf16_weight_free(Bf16Weight *c);

/* Rows [*o0, *o1) of block `part` (< BF16_WEIGHT_PARTS); starts the block's column
 * minima afresh, so every row of the block must then be written (bf16_weight_row). */
void bf16_weight_part(Bf16Weight *c, int part, int *o0, int *o1);
/* Row o of the copies from W's row o, which lies in block `part`. */
void bf16_weight_row(Bf16Weight *c, int o, int part);
/* All of the copies from W, as a pass of its own (OpenMP over the blocks). */
void bf16_weight_write(Bf16Weight *c);

/* A model's copies: w[k] for its tensor k (w[k].W NULL where it has none). */
typedef struct {
    int n;
    Bf16CopyKind kind;
    Bf16Weight *w;
} Bf16WeightSet;

/* The copy of W[OC][IC] in s, or NULL (s NULL, or none for W). */
const Bf16Weight *bf16_weight_find(const Bf16WeightSet *s, const float *W, int OC, int IC);
/* Frees every copy and the array; safe on a zeroed or freed set. */
void bf16_weights_free(Bf16WeightSet *s);

#endif
