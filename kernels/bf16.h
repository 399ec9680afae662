/* bf16: bfloat16 rounding and the linear layer's products in bf16 (--precision bf16).
 *
 * A bf16 value is the top 16 bits of a float32: sign, 8 exponent bits, 7 fraction
 * bits. The layer rounds the operands of its products (forward: input and weights;
 * backward: the output gradient with the weights or with the input) to bf16 and
 * accumulates their products in float32, with the float operations of the x86 instruction VDPBF16PS
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
 * docs/matmul.md ("bf16") has the tests behind these statements.
 *
 * The emulation runs most products on the float32 kernels (kernels/bf16_emul.h says
 * when that is exact); the rest, and builds whose float32 products are not fused
 * multiply-adds, step by step as bf16_fma does. */
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

/* Which code computes the chains; both give the same bits. BF16_AUTO: the instruction
 * where the build targets it (BF16_NATIVE), else the emulation. BF16_EMULATED: the
 * emulation in every build, so that a CPU with the instruction can test and time what
 * a CPU without it runs (HEADCOUNT_BF16=emulate, README). */
typedef enum { BF16_AUTO, BF16_EMULATED } Bf16Path;

/* Whether `path` runs the emulation in this build. */
static inline int bf16_emulated(Bf16Path path)
{
    return path == BF16_EMULATED || !BF16_NATIVE;
}

/* 1 where the emulation runs most products on the float32 kernels (this build's float32
 * chains are fused multiply-adds: kernels/bf16_emul.h), 0 where it computes every step
 * as bf16_fma does. */
int bf16_emulation_fast(void);

/* What the emulation costs against fp32, as docs/matmul.md ("bf16") measured it, for
 * the note the programs print where it runs (app/common/cli.h) and their --help. */
#define BF16_EMULATION_COST "a training step about 1.2-1.6x an fp32 one on an AMD EPYC Zen 3"
#define BF16_EMULATION_STEPWISE_COST                                                           \
    "a training step about 30x an fp32 one (step by step: this build's float32 products "     \
    "are not fused multiply-adds)"
/* --precision's lines of --help under its first (train, infer). */
#define BF16_HELP                                                                              \
    "(bf16: inputs rounded to bfloat16, sums in fp32. Where the CPU has no AVX512-BF16\n"      \
    "they are emulated: the same bits, " BF16_EMULATION_COST ")"

/* The product's weights are packed in panels of this many output columns. */
enum { BF16_PANEL = 32 };

Bf16 bf16_from_float(float x);

/* bf16_from_float on a float's bits, branch-free so that loops over it vectorise. */
static inline uint32_t bf16_round_bits(uint32_t u)
{
    uint32_t zero = (u >> 16) & 0x8000u;         /* zero or denormal: signed zero */
    uint32_t nan = (u >> 16) | 0x0040u;          /* NaN: truncated, made quiet */
    uint32_t near = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; /* nearest, ties to even (a
                                                  * carry goes into the exponent; past the
                                                  * largest value it gives infinity) */
    uint32_t r = (u & 0x7f800000u) == 0 ? zero : near;
    return (u & 0x7fffffffu) > 0x7f800000u ? nan : r;
}
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
/* One row of bf16_round_rows: dst[P] from row[K]. */
void bf16_round_row(uint32_t *dst, const float *row, int K);

/* Floats of uint32 that bf16_pack_weights writes for W[OC][IC]. */
size_t bf16_packed_size(int OC, int IC);

/* Rounds W[OC][IC] into panels of BF16_PANEL output columns: panel q, pair p,
 * column j at wp[((size_t)q * P + p) * BF16_PANEL + j], holding W[32q + j][2p] and
 * W[32q + j][2p + 1] as in bf16_round_rows; columns past OC are +0. */
void bf16_pack_weights(uint32_t *wp, const float *W, int OC, int IC);

/* What the kernel does around a chain; a NULL pointer skips its step. Pointers are at
 * the kernel's out[0][0] (bias at its column 0), rows ldc floats apart. */
typedef struct {
    int accumulate;       /* the chain starts from out's old value, else from +0 */
    const float *bias;    /* x = chain + bias[j] */
    const float *scale;   /* x = x * scale[i][j] (the GELU backward: gelu' x dout.W) */
    float *dgelu;         /* out = gelu(x), dgelu[i][j] = gelu'(x) (vmath.h, as
                           * matmul_forward_gelu); else out = x */
} Bf16Epilogue;

/* The two roundings of X[R][Cc] that put its rows (not its columns) in pairs, for the
 * products over R (the backward's, which sum over outputs or over positions):
 *   bf16_pack_cols: panels over the columns, as bf16_pack_weights does for X^T: panel
 *     q, pair p, column j holds X[2p][32q + j] and X[2p + 1][32q + j]
 *     (bf16_packed_size(Cc, R) words);
 *   bf16_round_cols: X^T's rows, as bf16_round_rows does for X^T: xr[c][p] holds
 *     X[2p][c] and X[2p + 1][c] (Cc x bf16_pairs(R) words). */
void bf16_pack_cols(uint32_t *wp, const float *X, int R, int Cc);
void bf16_round_cols(uint32_t *xr, const float *X, int R, int Cc);

/* One thread's share of a product: for rows i < M and columns j < n (n <= BF16_PANEL)
 * of panel wp (P pairs each), x = chain(ar[i], wp[., j]), finished by e. ar's rows are
 * lda pairs apart. The emulated path here is the step-by-step one. */
void bf16_kernel_nt(int M, int n, int P, const uint32_t *ar, size_t lda, const uint32_t *wp,
                    float *out, size_t ldc, const Bf16Epilogue *e, Bf16Path path);

/* The linear layer on OpenMP, as matmul_forward (matmul.h) with its products in bf16:
 * out[N][OC] = bf16 chain(in[n], W[o]) + bias[o], bias may be NULL. Rounds in and W
 * into per-thread scratch memory first. dgelu != NULL: the MLP's first layer, as
 * matmul_forward_gelu (out = gelu, dgelu = gelu'). Any thread count gives the same
 * bits. */
void bf16_forward(float *out, float *dgelu, const float *in, const float *W, const float *bias,
                  int N, int IC, int OC, Bf16Path path);

/* bf16_forward with W already packed by bf16_pack_weights (the sampler packs once). */
void bf16_forward_packed(float *out, float *dgelu, const float *in, const uint32_t *wp,
                         const float *bias, int N, int IC, int OC, Bf16Path path);

/* The linear layer's gradients with the products in bf16, as matmul_backward
 * (matmul.h) computes them in fp32: dout, in and W rounded to bf16, then
 *   din[N][IC] = chain over o of dout[n][o] W[o][ic]  (overwritten; with dgelu != NULL
 *                multiplied by dgelu[n][ic] after the chain, as matmul_backward_gelu)
 *   dW[OC][IC] = chain over n of dout[n][o] in[n][ic], the chain starting from dW's
 *                old value (the gradient accumulates; denormal old values read as 0)
 *   dbias[OC] += sum_n dout[n][o] in fp32, matmul_backward's.
 * Any of din, dW, dbias may be NULL. Any thread count gives the same bits. */
void bf16_backward(float *din, float *dW, float *dbias, const float *dout, const float *in,
                   const float *W, const float *dgelu, int N, int IC, int OC, Bf16Path path);

/* The two above reading W's bf16 copies wc (kernels/bf16_weight.h: written beside W,
 * where W is updated) instead of rounding W; wc NULL, or of a kind the code that runs
 * does not read, rounds W as they do. The forward also reads in's rows rounded by
 * their producer, rin (kernels/bf16_rows.h), where rin holds in's rounding in the
 * layout the code that runs reads; else (rin NULL too) it rounds in. Likewise the
 * backward reads dout's rows for din's product from rdout (the cross-entropy backward
 * writes dlogits' rows, model/layers.h), where rdout holds dout's rounding in that
 * layout; else (rdout NULL too) it rounds dout's rows. Where rdout also holds dout's
 * columns in that layout (the residual gradient's producers write them), dW's product
 * reads them instead of rounding dout down its columns; in's columns are rounded as
 * before. The same bits either way. */
struct Bf16Weight;
struct Bf16Rows;
void bf16_forward_with(float *out, float *dgelu, const float *in, const struct Bf16Rows *rin,
                       const float *W, const struct Bf16Weight *wc, const float *bias, int N,
                       int IC, int OC, Bf16Path path);
void bf16_backward_with(float *din, float *dW, float *dbias, const float *dout,
                        const struct Bf16Rows *rdout, const float *in, const float *W,
                        const struct Bf16Weight *wc, const float *dgelu, int N, int IC, int OC,
                        Bf16Path path);

/* The two above that also round the product's own output along its rows for the
 * product that reads it next: the forward's out[N][OC] into rout (the GELU's output,
 * which fcproj reads), the backward's din[N][IC] into rdin (the GELU backward's dfch,
 * which fc's backward reads as dout), in rout's or rdin's own layout
 * (kernels/bf16_rows.h), whatever path computes the product; where rdin has room for
 * din's columns, those too (for fc's dW), a block of rows once finished. The
 * instruction's and the step-by-step tiles round each block of outputs as it finishes,
 * while it is in cache;
 * the emulation on the float32 kernels rounds the final output (its exceptions
 * recomputed) in a pass after the product, which saves nothing over the next product's
 * own pass (docs/matmul.md). rout/rdin NULL: none; without room for the output it is
 * dropped (holds nothing). It must not be rin or rdout. The product's bits are those of
 * the two above, and the copy is the rounding the next product would make of the
 * output. */
void bf16_forward_rounding(float *out, float *dgelu, struct Bf16Rows *rout, const float *in,
                           const struct Bf16Rows *rin, const float *W,
                           const struct Bf16Weight *wc, const float *bias, int N, int IC,
                           int OC, Bf16Path path);
/* bf16_forward_rounding that also rounds out's columns into rcols (from
 * bf16_rows_init_in_cols, started here on out; or NULL), in the layout the dW product
 * reads for its `in`: fc's product the GELU's output for fcproj's dW. The instruction's
 * and the step-by-step tiles round each band's blocks of rows once the band is
 * finished; where the emulation on the float32 kernels computes the product rcols is
 * dropped (holds nothing): a pass after the product would save nothing over dW's own
 * (docs/matmul.md). It must not be rout or rin; the product's bits are unchanged. */
void bf16_forward_rounding_cols(float *out, float *dgelu, struct Bf16Rows *rout,
                                struct Bf16Rows *rcols, const float *in,
                                const struct Bf16Rows *rin, const float *W,
                                const struct Bf16Weight *wc, const float *bias, int N, int IC,
                                int OC, Bf16Path path);
/* rin: in's columns rounded by in's producer in the forward (bf16_rows_init_in_cols,
 * kernels/bf16_rows.h), read by dW's product instead of rounding in, or NULL (or not
 * of in, or not of the path's kind: it rounds them itself, to the same bits). */
void bf16_backward_rounding(float *din, struct Bf16Rows *rdin, float *dW, float *dbias,
                            const float *dout, const struct Bf16Rows *rdout, const float *in,
                            const struct Bf16Rows *rin, const float *W,
                            const struct Bf16Weight *wc, const float *dgelu, int N, int IC,
                            int OC, Bf16Path path);

#endif
