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

/* Writes dqkv[B][T][3A] (overwritten: attention is qkv's only consumer, the exception
 * to the adding rule that matmul.h's din also takes); datt[B][H][T][T] is scratch.
 * Reads dout[B][T][A], qkv, att and (when p > 0) attd. */
void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv,
                        const float *att, const float *attd, int B, int T, int H, int D, float p);

/* s[0..n) <- softmax(s * scale), with the 8-lane exp of vmath.h and a fixed
 * summation order. Shared by the full forward (each causal row) and the KV-cached
 * sampler (one query row), so both give the same weights bit for bit. */
void attention_softmax_row(float *s, int n, float scale);

#endif
