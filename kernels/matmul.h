/* matmul: the dense matrix products that training spends its time in.
 *
 * Three shapes, all row-major, none needing a transposed copy:
 *   nt: C[M][N] (+)= A[M][K] · B[N][K]^T   (linear forward: out = in · W^T)
 *   nn: C[M][N] (+)= A[M][K] · B[K][N]     (linear input gradient: din = dout · W)
 *   tn: C[M][N] (+)= A[K][M]^T · B[K][N]   (linear weight gradient: dW = dout^T · in)
 * The matmul_* kernels are single-threaded and take leading dimensions, so the
 * attention code can call them on strided per-head views inside its own parallel
 * loop. matmul_forward / matmul_backward are the linear layer, parallelised with
 * OpenMP over independent output tiles.
 *
 * Determinism contract: every element of C is computed by one thread with the
 * same sequence of float operations whatever M, N, the tiling, the element's
 * position in a tile or the thread count; so computing a sub-block gives the
 * same bits as computing the whole product. That sequence is one fused multiply-add
 * chain over k in order, the same for nt, nn and tn, so a product gives the same bits
 * whichever kernel computes it (attention and the sampler's KV cache rely on it). */
#ifndef HEADCOUNT_MATMUL_H
#define HEADCOUNT_MATMUL_H

/* accumulate = 0: C = A·B; accumulate = 1: C = C + A·B (C's old value first). */
void matmul_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate);
void matmul_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate);
void matmul_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate);

/* Causal products for attention over T positions, single-threaded, the same chains
 * as above (so the same bits as matmul_nt / matmul_nn on the rows a sampler computes
 * one at a time), with only the work the causal mask needs:
 *   nt_causal: C[i][j] (+)= sum_k A[i][k] B[j][k] for j <= i < T (scores). Entries
 *              above the diagonal near it are written with meaningless values.
 *   nn_causal: C[i][n] (+)= sum_{k <= i} A[i][k] B[k][n]            (P V, dS K)
 *   tn_causal: C[j][n] (+)= sum_{i >= j} A[i][j] B[i][n]            (dS^T Q, P^T dY)
 * nn_causal and tn_causal read A a little past the diagonal (up to the end of a 6-row
 * tile) and need it to hold zeros there: A is lower triangular. Adding those exact
 * zeros leaves every chain unchanged. */
void matmul_nt_causal(int T, int K, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, int accumulate);
void matmul_nn_causal(int T, int N, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, int accumulate);
void matmul_tn_causal(int T, int N, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, int accumulate);

/* The causal products on M of the query rows (attention at the rows a router chose):
 * rows[0..M) ascending positions, and row r of the compact A, of C (nt, nn) and of B
 * (tn) stands for position rows[r]. Overwrite C; the same chains as the *_causal products
 * on those rows but for exact zero terms (left-out rows, zeros past a tile's
 * diagonal), which can change only a zero's sign (docs/bench.md, "Routing's cost"):
 *   nt_causal_rows: C[r][j] = sum_k A[r][k] B[j][k] for j <= rows[r]. Entries past
 *                   rows[r] are written with meaningless values (up to the tile's last).
 *   nn_causal_rows: C[r][n] = sum_{k <= rows[r]} A[r][k] B[k][n]; reads A[r][k] up
 *                   to the largest position of r's 6-row tile, which must be zeros.
 *   tn_causal_rows: C[j][n] = sum_{r: rows[r] >= j} A[r][j] B[r][n] for j < T (0 for a
 *                   j past every row), in order of r; A[r][j] must be 0 for j > rows[r]
 *                   up to T. */
void matmul_nt_causal_rows(int M, const int *rows, int K, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc);
void matmul_nn_causal_rows(int M, const int *rows, int N, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc);
void matmul_tn_causal_rows(int M, const int *rows, int T, int N, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc);

/* out[N][OC] = in[N][IC] · W[OC][IC]^T + bias[OC]; bias may be NULL. Overwrites out.
 * The bias is added after the dot product: out = dot + bias. */
void matmul_forward(float *out, const float *in, const float *W, const float *bias,
                    int N, int IC, int OC);

/* The MLP's first layer with its GELU fused into the tiles: for pre = in . W^T + bias
 * (exactly as matmul_forward), act = gelu(pre) exactly as gelu_forward (layers.h) and
 * dgelu = gelu'(pre) exactly as gelu_backward uses it, without a second pass over
 * memory. The backward needs only dgelu (matmul_backward_gelu), so pre is not kept:
 * storing the derivative instead saves recomputing the GELU in the backward. */
void matmul_forward_gelu(float *act, float *dgelu, const float *in, const float *W,
                         const float *bias, int N, int IC, int OC);

/* matmul_forward with the weights given transposed, Wt[IC][OC] = W^T, for products of
 * a few rows (sampling one token at a time): the tiles read Wt in place instead of
 * gathering W's columns for every call. The same bits as matmul_forward. */
void matmul_forward_t(float *out, const float *in, const float *Wt, const float *bias, int N,
                      int IC, int OC);

/* The linear layer's gradients:
 *   din[N][IC]   = dout[N][OC] · W[OC][IC]          (overwritten)
 *   dW[OC][IC]  += dout^T · in          (sum over n in order 0..N-1)
 *   dbias[OC]   += sum_n dout[n][oc]    (in order 0..N-1)
 * dW and dbias are added into (the caller zeroes them once per step). din is the one
 * exception to that rule: a layer's input gradient has this layer as its only
 * contributor, so it is written, which saves zeroing and re-reading it.
 * Any of din, dW, dbias may be NULL to skip that gradient. */
void matmul_backward(float *din, float *dW, float *dbias, const float *dout, const float *in,
                     const float *W, int N, int IC, int OC);

/* matmul_backward for a layer whose input is act = gelu(x), with the GELU's backward
 * fused into the din tiles: given dgelu = gelu'(x) (from matmul_forward_gelu),
 * din = dgelu * (dout . W) is the gradient of x, not of act. din is overwritten and
 * dW, dbias added into, as above. */
void matmul_backward_gelu(float *din, float *dW, float *dbias, const float *dout,
                          const float *in, const float *W, const float *dgelu, int N, int IC,
                          int OC);

#endif
