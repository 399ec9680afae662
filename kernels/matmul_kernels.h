/* matmul_kernels: the single-threaded kernel entry points that kernels/linear.c builds
 * the parallel linear layers from; internal to model/. Strides in floats; the float
 * operations are matmul.c's (one FMA chain per element, bias added after it).
 *   nt:       C = A[M][K] . B[N][K]^T (+ bias[j])                (overwrites C)
 *   nt_gelu:   x = A . B^T + bias as nt; C = gelu(x), dC = gelu'(x) (C's layout)
 *   nn_scaled: C = (A[M][K] . B[K][N]) * s             (s has C's layout)
 *   nn_row:   C[N] = a[K] . B[K][N] (+ bias), one row read in place */
#ifndef HEADCOUNT_MATMUL_KERNELS_H
#define HEADCOUNT_MATMUL_KERNELS_H

#include <math.h>
#include <stddef.h>

/* The register tile's path: AVX-512 when the compiler targets it (16-float vectors,
 * panels of B 32 columns wide), else AVX2 + FMA or portable C (16-column blocks).
 * The linear layer splits its outputs into column blocks of MATMUL_PANEL, so that no
 * block leaves a partial panel mid-row. Only speed depends on which: the bits do not. */
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX2__) && defined(__FMA__)
#define MATMUL_AVX512 1
enum { MATMUL_PANEL = 32 };
#else
#define MATMUL_AVX512 0
enum { MATMUL_PANEL = 16 };
#endif

/* 1 where every step of a chain is a fused multiply-add: the vector tiles, or the
 * portable code where the target has a fast fmaf (matmul.c's MADD); 0 where it is a
 * multiply and an add. The bf16 emulation runs on these kernels only where it is 1
 * (kernels/bf16_emul.h). */
#if (defined(__AVX2__) && defined(__FMA__)) || defined(FP_FAST_FMAF)
#define MATMUL_FMA 1
#else
#define MATMUL_FMA 0
#endif

/* The weight gradient's (tn's) output tiles are at most this many columns wide: each
 * tile reads its columns of both operands over all N rows, so wider tiles read less.
 * The AVX-512 tile uses 384 (tuned on a 2 MiB L2), the AVX2 path 256 (tuned on Zen 3);
 * docs/matmul.md has the measurements. */
#if MATMUL_AVX512
enum { MATMUL_TN_COLS = 384 };
#else
enum { MATMUL_TN_COLS = 256 };
#endif

/* tn packs its A in blocks of this many rows (a multiple of the 6-row tile); a tn
 * product of at most this many rows packs each panel of B once per k block. */
enum { MATMUL_TN_ROWS = 192 };

void matmul_kernel_nt(int M, int N, int K, const float *A, size_t lda, const float *B,
                      size_t ldb, float *C, size_t ldc, const float *bias);
void matmul_kernel_nt_gelu(int M, int N, int K, const float *A, size_t lda, const float *B,
                           size_t ldb, float *C, size_t ldc, const float *bias, float *dC);
void matmul_kernel_nn_scaled(int M, int N, int K, const float *A, size_t lda, const float *B,
                             size_t ldb, float *C, size_t ldc, const float *s);
void matmul_kernel_nn_row(int N, int K, const float *a, const float *B, size_t ldb, float *C,
                          const float *bias);

#endif
