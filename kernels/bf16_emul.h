/* bf16_emul: the bf16 chains of kernels/bf16.h on the float32 kernels (matmul.h), for
 * the emulated path; internal to kernels/bf16.c.
 *
 * Why that can be exact. A step of the chain is fma(a, b, acc) rounded to nearest
 * even, except that tiny results are flushed and denormal inputs read as zero
 * (bf16_fma). A bf16 value with biased exponent E is an integer multiple of
 * 2^(E - 134); so where every nonzero a and b of an output's chain have biased
 * exponents Ea + Eb >= 142, each product a*b is a multiple of 2^-126, and where the
 * chain starts from 0 or from a float of biased exponent >= 24 (also a multiple of
 * 2^-126), every exact partial sum is one too. A float rounding of a multiple of
 * 2^-126 is again one (it is exact, or its spacing is coarser), so every step's result
 * is 0 or at least 2^-126 in magnitude: no step is tiny, no input denormal, and each
 * step is exactly fma. The float32 kernels compute one fma chain over k in order
 * (matmul.h) where MATMUL_FMA is 1; given the rounded operands with each pair's two
 * elements swapped (the odd one first, as the instruction takes them) and the padding
 * zero of an odd length kept, their chain is the bf16 chain, bit for bit, and their
 * bias and GELU epilogues are the bf16 tile's (vmath.h, added after the chain).
 *
 * The minimum exponent is taken per row of one operand and per column of the other,
 * so an output whose pair of them fails the test (or whose old dW fails it) is an
 * exception: it is recomputed afterwards with bf16_fma's steps. When exceptions are
 * many, or MATMUL_FMA is 0, these functions decline and bf16.c runs its step-by-step
 * tiles instead. Both ways give the same bits, so the choice is only about speed. */
#ifndef HEADCOUNT_BF16_EMUL_H
#define HEADCOUNT_BF16_EMUL_H

#include <stdint.h>

#include "kernels/bf16_weight.h"

/* A rounded value's key for the smallest exponent: its bf16 magnitude minus one (r:
 * bf16 bits in the low 16), so that a zero (wrapping round) is the largest key and the
 * least key of a row or column is its smallest nonzero magnitude's. */
static inline uint32_t bf16_emul_key(uint32_t r)
{
    return (r & 0x7fffu) - 1u;
}

/* The biased exponent of the smallest nonzero magnitude among keys whose least is k;
 * 255 where all were zero. */
static inline unsigned char bf16_emul_exp(uint32_t k)
{
    return k == UINT32_MAX ? 255 : (unsigned char)((k + 1u) >> 7);
}

/* The rounding of one row this path reads: dst[2p] = bf16(row[2p + 1]) (+0 past K),
 * dst[2p + 1] = bf16(row[2p]), as floats, for p < bf16_pairs(K); returns the row's
 * smallest biased exponent (bf16_emul_exp). */
unsigned char bf16_emul_round_row(float *dst, const float *row, int K);

/* bf16_forward's product, emulated: 1 done, 0 declined (nothing written). rin: in's
 * rows rounded by their producer (bf16_rows.h), of kind BF16_COPY_FLOATS, read instead
 * of rounding in, or NULL. wc: W's copies (bf16_weight.h) of kind BF16_COPY_FLOATS,
 * read instead of rounding W, or NULL. rout: started on out (bf16_rows_start), of
 * either kind, or NULL: out's rows rounded into it once out is final (exceptions
 * recomputed), in a pass after the product. */
struct Bf16Rows;
int bf16_emul_forward(float *out, float *dgelu, struct Bf16Rows *rout, const float *in,
                      const struct Bf16Rows *rin, const float *W, const Bf16Weight *wc,
                      const float *bias, int N, int IC, int OC);

/* bf16_forward_packed's product without the GELU, emulated on the packed panels one row
 * at a time (the sampler's steps): 1 done, 0 declined (dgelu asked for, or MATMUL_FMA
 * is 0). The exponent test is per row and panel; a panel that fails it is recomputed
 * with bf16_fma's steps. */
int bf16_emul_forward_packed(float *out, const float *in, const uint32_t *wp, const float *bias,
                             int N, int IC, int OC);

/* What bf16_emul_backward did: din, dW (each only when asked for). */
enum { BF16_EMUL_DIN = 1, BF16_EMUL_DW = 2 };

/* bf16_backward's din and dW products, emulated (dbias is left to the caller); returns
 * the BF16_EMUL_ bits of those done, the others untouched. wc as in bf16_emul_forward
 * (din reads its backward copy); rdout: dout's rows rounded by their producer, of kind
 * BF16_COPY_FLOATS, read by din's product instead of rounding dout, or NULL (and where
 * it holds dout's columns too, dW's product reads them instead of rounding); rdin: as
 * bf16_emul_forward's rout, for din (written only when din is done); rin: in's columns
 * rounded by in's producer (bf16_rows_init_in_cols, kind BF16_COPY_FLOATS), read by dW's
 * product instead of rounding in, or NULL. */
int bf16_emul_backward(float *din, struct Bf16Rows *rdin, float *dW, const float *dout,
                       const struct Bf16Rows *rdout, const float *in,
                       const struct Bf16Rows *rin, const float *W, const Bf16Weight *wc,
                       const float *dgelu, int N, int IC, int OC);

#endif
