/* layers: the element-wise and row-wise layers of the transformer, each forward
 * next to its backward. The linear layer's products live in matmul.h and
 * attention in attention.h.
 *
 * Conventions (STYLE.md): forward overwrites its outputs; backward adds into
 * every gradient it is given. N = B*T rows. OpenMP splits only over independent
 * outputs; every sum runs in one thread in a fixed order. */
#ifndef HEADCOUNT_LAYERS_H
#define HEADCOUNT_LAYERS_H

#include <stddef.h>
#include <stdint.h>

/* out[B][T][C] = wte[tokens[b][t]] + wpe[t]. Backward needs only tokens. */
void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                     int B, int T, int C);
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                      int B, int T, int C);

/* out[N][C] = (in - mean) * rstd * w + b per row, biased variance, eps 1e-5.
 * Stores mean[N] and rstd[N] for the backward, which also reads in and w. */
void layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w,
                       const float *b, int N, int C);
/* layernorm_forward that also rounds each row of out to bf16 into r while the row is in
 * cache (kernels/bf16_rows.h), for the bf16 product that reads out next, and where rc
 * (another Bf16Rows, from bf16_rows_init_in_cols) has room, out's columns into rc a
 * block of BF16_COL_ROWS rows at a time, for the dW product that reads out as its `in`
 * in the backward (rc without room is dropped); r, rc NULL: layernorm_forward. out's
 * bits are the same either way. */
struct Bf16Rows;
void layernorm_forward_rounded(float *out, float *mean, float *rstd, const float *in,
                               const float *w, const float *b, int N, int C,
                               struct Bf16Rows *r, struct Bf16Rows *rc);
void layernorm_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                        const float *w, const float *mean, const float *rstd, int N, int C);
/* layernorm_backward that also rounds each row of din, once added to, into r while the
 * row is in cache (kernels/bf16_rows.h), for the bf16 backward that reads din next as
 * its dout (the residual gradient, read by proj's and fcproj's din products), and where
 * r has room for columns each finished block of rows into its columns (for their dW
 * products); r NULL: layernorm_backward. din's, dw's and db's bits are the same either
 * way. */
void layernorm_backward_rounded(float *din, float *dw, float *db, const float *dout,
                                const float *in, const float *w, const float *mean,
                                const float *rstd, int N, int C, struct Bf16Rows *r);

/* GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
 * x * sigmoid(2u) (the same function). Backward reads the forward's input. */
void gelu_forward(float *out, const float *in, size_t n);
void gelu_backward(float *din, const float *dout, const float *in, size_t n);

/* out = a + b, element-wise. */
void residual_forward(float *out, const float *a, const float *b, size_t n);

/* p[v] = exp(z[v] - mx) / sum over v < V (8-lane exp, lane sums joined by a fixed
 * tree); returns the sum. p may be z. The row softmax of crossentropy_forward and of
 * the sampler, so both give the same bits for the same logits. */
float softmax_row(float *p, const float *z, float mx, int V);

/* Softmax over V logits per row and the cross-entropy of the target.
 * probs[N][V] (stored for the backward) and losses[N] in nats; targets may be
 * NULL (inference: probs only). Returns the mean loss, summed in row order in
 * double, or 0 when targets is NULL. */
double crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                            int N, int V);
/* dlogits += scale * (probs - onehot(target)); scale is 1/N for a mean loss. */
void crossentropy_backward(float *dlogits, const float *probs, const int *targets, int N, int V,
                           float scale);
/* crossentropy_backward that also rounds each row of dlogits, once added to, into r
 * while the row is in cache (kernels/bf16_rows.h), for the bf16 backward of the logits
 * layer that reads dlogits next, and where r has room for columns each finished block
 * of rows into them (for its dW product); r NULL: crossentropy_backward. dlogits' bits
 * are the same either way. */
void crossentropy_backward_rounded(float *dlogits, const float *probs, const int *targets,
                                   int N, int V, float scale, struct Bf16Rows *r);

/* Inverted dropout: out = in * keep / (1 - p), keep ~ Bernoulli(1 - p) decided by
 * rng_hash(key, i), so a mask depends only on (key, element index) and the
 * backward recomputes it. in and out may alias. p = 0 copies. */
void dropout_forward(float *out, const float *in, size_t n, float p, uint64_t key);
void dropout_backward(float *din, const float *dout, size_t n, float p, uint64_t key);
/* dropout_backward over din[N][C] that also rounds each row of din, once added to, into
 * r while the row is in cache (kernels/bf16_rows.h), for the bf16 backward that reads
 * din next (the branch's gradient with dropout on the residual), and where r has room
 * for columns each finished block of rows into them; r NULL: dropout_backward over N C
 * elements. din's bits are the same either way. */
void dropout_backward_rounded(float *din, const float *dout, int N, int C, float p,
                              uint64_t key, struct Bf16Rows *r);
/* The keep decision shared by every dropout site (attention uses it per weight). */
int dropout_keep(uint64_t key, uint64_t i, float p);

/* Head dropout on y[B][T][H*D] (the heads' outputs, concatenated), in place:
 *   y[b][t][hD + d] *= m_bh,  m_bh = keep_bh / (1 - p),  keep_bh = dropout_keep(key, b H + h, p)
 * one decision per (sequence b, head h), shared by all T positions and D channels,
 * so a dropped head contributes exactly 0 to its sequence and a kept one is scaled
 * by exactly 1/(1 - p). p = 0 leaves y untouched. */
void head_dropout_forward(float *y, int B, int T, int H, int D, float p, uint64_t key);
/* The backward of y' = m_bh y is dy = m_bh dy': the same mask, applied in place to
 * dy[B][T][H*D]. It overwrites rather than adds (the exception to the rule above):
 * its caller's dy is scratch that the projection's backward has just written. */
void head_dropout_backward(float *dy, int B, int T, int H, int D, float p, uint64_t key);

#endif
