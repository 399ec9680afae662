/* attention: causal multi-head self-attention, forward and backward.
 *
 * The qkv buffer is the output of the qkv linear layer: for each position,
 * 3A floats (A = H*D): q in [0, A), k in [A, 2A), v in [2A, 3A), head h owning
 * [hD, (h+1)D) of each. Head h computes softmax(q k^T / sqrt(D)) over keys
 * j <= i and writes its D outputs at [hD, (h+1)D) of out's A floats per position.
 * The products go through the strided kernels of matmul.h on blocks of query
 * rows, so the masked upper triangle is (almost all) skipped. */
#ifndef HEADCOUNT_ATTENTION_H
#define HEADCOUNT_ATTENTION_H

#include <stdint.h>

/* out[B][T][A]; att[B][H][T][T] the softmax weights (zero above the diagonal),
 * kept for the backward and for head analysis; qkv[B][T][3A].
 * With dropout p > 0, attd[B][H][T][T] receives the dropped, rescaled weights
 * (mask from dropout_keep(key, index into attd)) and out uses them; attd is
 * unused (may be NULL) when p = 0. Forward stores att (and attd) for the backward. */
void attention_forward(float *out, float *att, float *attd, const float *qkv,
                       int B, int T, int H, int D, float p, uint64_t key);

/* bf16 (kernels/bf16_rows.h): the same, and when r is not NULL it then rounds out's
 * rows (B T rows of A) into r, once every head has written its slice of them, for the
 * product that reads out next (proj's forward, when nothing modifies out in between);
 * when rc (another Bf16Rows, from bf16_rows_init_in_cols) is not NULL, out's columns
 * too, a block of BF16_COL_ROWS rows at a time, for proj's dW in the backward. r or rc
 * without room for out is dropped (bf16_rows_drop). */
struct Bf16Rows;
void attention_forward_rounded(float *out, float *att, float *attd, const float *qkv,
                               int B, int T, int H, int D, float p, uint64_t key,
                               struct Bf16Rows *r, struct Bf16Rows *rc);

/* Writes dqkv[B][T][3A] (overwritten: attention is qkv's only consumer, the exception
 * to the adding rule that matmul.h's din also takes); datt[B][H][T][T] is scratch.
 * Reads dout[B][T][A], qkv, att and (when p > 0) attd. */
void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv,
                        const float *att, const float *attd, int B, int T, int H, int D, float p);
/* The same, and when r is not NULL it then rounds dqkv's rows (B T rows of 3A) into r,
 * for qkv's backward (its dout), and where r has room for columns dqkv's columns too
 * (for qkv's dW); r without room for dqkv is dropped. */
void attention_backward_rounded(float *dqkv, float *datt, const float *dout, const float *qkv,
                                const float *att, const float *attd, int B, int T, int H, int D,
                                float p, struct Bf16Rows *r);

/* The routed passes (model/route.h): on[B][T][H] is 1 where a token's router chose
 * the head, 0 where it did not. A head attends only at the query rows whose token
 * chose it: at the others, out's D floats and the row of att (and of attd) are
 * zeros, and the backward neither reads dout there (a route weight of 0 made it 0)
 * nor adds anything from it. At a chosen row every value is the one
 * attention_forward / attention_backward compute (docs/bench.md, "Routing's cost",
 * says when a zero's sign may differ, as the sums leave out or add exact zeros); a
 * head chosen at every row of a sequence runs their code. */
void attention_forward_routed(float *out, float *att, float *attd, const float *qkv,
                              const float *on, int B, int T, int H, int D, float p, uint64_t key);
void attention_backward_routed(float *dqkv, float *datt, const float *dout, const float *qkv,
                               const float *att, const float *attd, const float *on, int B, int T,
                               int H, int D, float p);
/* The routed backward that then rounds dqkv's rows into r, as attention_backward_rounded;
 * on NULL: every row routed, which is attention_backward_rounded. */
void attention_backward_routed_rounded(float *dqkv, float *datt, const float *dout,
                                       const float *qkv, const float *att, const float *attd,
                                       const float *on, int B, int T, int H, int D, float p,
                                       struct Bf16Rows *r);

/* Writes into att's rows that attention_forward_routed left zero (on = 0) the weights
 * attention_forward stores there, bit for bit: for analysis of a routed training
 * step, which reads every head's attention at every row. */
void attention_fill_unrouted(float *att, const float *qkv, const float *on, int B, int T, int H,
                             int D);

/* s[0..n) <- softmax(s * scale), with the 8-lane exp of vmath.h and a fixed
 * summation order. Shared by the full forward (each causal row) and the KV-cached
 * sampler (one query row), so both give the same weights bit for bit. */
void attention_softmax_row(float *s, int n, float scale);

#endif
