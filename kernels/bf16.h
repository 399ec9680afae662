/* bf16: bfloat16 rounding and the linear layer's forward in bf16 (--precision bf16).
 *
 * A bf16 value is the top 16 bits of a float32: sign, 8 exponent bits, 7 fraction
 * bits. The layer rounds its input and its weights to bf16 and accumulates their
 * products in float32, with the float operations of the x86 instruction VDPBF16PS
 * (Intel SDM, "VDPBF16PS"), so that the native kernel (that instruction, where the
 * compiler targets AVX512_BF16) and the emulation every other build runs (fmaf)
 * give the same bits:
 *   - rounding (bf16_from_float) is VCVTNE2PS2BF16's: round to nearest even; zero
 *     and denormal inputs become a zero of the same sign; infinities stay; a NaN
 *     keeps its top bits and is made quiet (fraction bit 6 set);
 *   - the chain of one output: k taken in pairs (2p, 2p+1), K padded with a zero to
 *     an even length; per pair acc = fma(a[2p+1], b[2p+1], acc), then
 *     acc = fma(a[2p], b[2p], acc) (the odd element first, as the instruction does);
 *     each step is one fused multiply-add rounded to nearest even with denormal
 *     inputs (a, b and acc) read as zero and a denormal result flushed to a zero of
 *     its sign, tininess judged after rounding (bf16_fma). A product of two bf16
 *     values is exact in float32, so an fp32 fma reproduces each step; the one case
 *     fma alone gets wrong (an exact sum just below 2^-126 that fma rounds up to
 *     2^-126 but the instruction flushes) is recomputed scaled by 2^24.
 *   - NaN results are NaN in every build, but their payload bits are not promised.
 * docs/matmul.md ("bf16") has the tests behind these statements. */
#ifndef HEADCOUNT_BF16_H
#define HEADCOUNT_BF16_H

#include <stddef.h>
#include <stdint.h>

typedef uint16_t Bf16;

/* 1 where the build targets AVX512_BF16 (the native kernel), else 0 (emulation). */
#if defined(__AVX512BF16__) && defined(__AVX512F__) && defined(__AVX512VL__)
#define BF16_NATIVE 1
#else
#define BF16_NATIVE 0
#endif

/* The product's weights are packed in panels of this many output columns. */
enum { BF16_PANEL = 32 };

Bf16 bf16_from_float(float x);
float bf16_to_float(Bf16 h);

/* One step of the chain: acc + a * b as VDPBF16PS computes it (see above). */
float bf16_fma(float acc, Bf16 a, Bf16 b);

/* Pairs of k for a sum of length K: ceil(K / 2). */
static inline int bf16_pairs(int K)
{
    return (K + 1) / 2;
}

/* Rounds x[N][K] into xr[N][P] pairs (P = bf16_pairs(K); pair p of row n holds
 * k = 2p in its low and 2p + 1 in its high 16 bits; a missing k is +0). */
void bf16_round_rows(uint32_t *xr, const float *x, int N, int K);

/* Floats of uint32 that bf16_pack_weights writes for W[OC][IC]. */
size_t bf16_packed_size(int OC, int IC);

/* Rounds W[OC][IC] into panels of BF16_PANEL output columns: panel q, pair p,
 * column j at wp[((size_t)q * P + p) * BF16_PANEL + j], holding W[32q + j][2p] and
 * W[32q + j][2p + 1] as in bf16_round_rows; columns past OC are +0. */
void bf16_pack_weights(uint32_t *wp, const float *W, int OC, int IC);

/* One thread's share of the layer: for rows i < M and columns j < n (n <= BF16_PANEL)
 * of panel wp (P pairs each), x = chain(ar[i], wp[., j]) + bias[j] (bias may be NULL:
 * then no addition); with dgelu == NULL out[i][j] = x, else out = gelu(x) and
 * dgelu = gelu'(x), vmath.h's functions, as matmul_forward_gelu. ar's rows are lda
 * pairs apart, out's and dgelu's rows ldc floats apart. */
void bf16_kernel_nt(int M, int n, int P, const uint32_t *ar, size_t lda, const uint32_t *wp,
                    float *out, size_t ldc, const float *bias, float *dgelu);

/* The linear layer on OpenMP, as matmul_forward (matmul.h) with its products in bf16:
 * out[N][OC] = bf16 chain(in[n], W[o]) + bias[o], bias may be NULL. Rounds in and W
 * into per-thread scratch memory first. dgelu != NULL: the MLP's first layer, as
 * matmul_forward_gelu (out = gelu, dgelu = gelu'). Any thread count gives the same
 * bits. */
void bf16_forward(float *out, float *dgelu, const float *in, const float *W, const float *bias,
                  int N, int IC, int OC);

/* bf16_forward with W already packed by bf16_pack_weights (the sampler packs once). */
void bf16_forward_packed(float *out, float *dgelu, const float *in, const uint32_t *wp,
                         const float *bias, int N, int IC, int OC);

#endif
