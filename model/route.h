/* route: mixture-of-heads attention routing (Jin et al. 2024, "MoH: Multi-Head
 * Attention as Mixture-of-Head Attention"; Zhang et al. 2022, "Mixture of
 * Attention Heads"): each token of a layer uses K of its H heads.
 *
 * A router per layer maps a token's attention input x (ln1's output, C floats)
 * to H scores s = W x + b. The token takes the K heads of largest score; a tie
 * goes to the lower head index (head h ranks below every head j with s_j > s_h
 * and every j < h with s_j = s_h, and is chosen when fewer than K heads rank
 * above it). A chosen head's output is multiplied by its weight
 *   g_h = exp(s_h) / sum over chosen j of exp(s_j),
 * the softmax renormalised over the K chosen scores, as MoH does; the other
 * heads' outputs are set to exactly 0. So with K = 1 the one weight is exactly
 * 1.0, and with K = H the weights are the softmax over all heads. The choice
 * itself is piecewise constant in s: gradients reach the router only through
 * the chosen heads' weights and the balance loss.
 *
 * The balance loss of a layer (Switch Transformer's, Fedus et al. 2021, taken
 * to K choices per token) is
 *   H sum_h f_h P_h,   f_h = (tokens that chose h) / (N K),   P_h = mean over
 *   the N tokens of p_h,  p = softmax(s) over all H heads;
 * f_h is a count (no gradient), P_h is differentiable. Both sum to 1 over h, and
 * the loss is 1 when the heads are used evenly and H at worst. A model's balance
 * loss is the sum over its layers; its coefficient is the caller's.
 *
 * The scores are float32 in every precision (vmath_dot's fixed order), the
 * softmaxes and weights computed from them in double in one thread and rounded
 * once, so thread count and instruction set do not change their bits. This file holds the maths
 * only: where the router sits in the model is gpt.c's. */
#ifndef HEADCOUNT_ROUTE_H
#define HEADCOUNT_ROUTE_H

/* The router of one layer over N tokens: x (N, C), W (H, C), b (H). Writes
 * prob (N, H) the softmax of the scores over all heads, on (N, H) 1 for a chosen
 * head and 0 for the others, weight (N, H) g_h for a chosen head and 0 for the
 * others. 1 <= K <= H. Returns the layer's balance loss H sum_h f_h P_h.
 * Stores what route_backward and route_scores_backward read (prob, on, weight). */
double route_scores_forward(float *prob, float *on, float *weight, const float *x,
                            const float *W, const float *b, int N, int C, int H, int K);

/* out[n][hD + d] = weight[n][h] in[n][hD + d] for a chosen head, exactly 0 for
 * another. out, in (N, H*D); out and in must not alias. */
void route_forward(float *out, const float *in, const float *on, const float *weight, int N,
                   int H, int D);

/* The backward of route_forward and of the weights and the balance loss, in
 * place on dout (N, H*D), which enters as dL/dout and leaves as dL/din (g_h
 * dL/dout for a chosen head, 0 for another); writes dscore (N, H) = dL/ds for
 * L = (whatever consumed out) + balance * (this layer's balance loss). in is
 * route_forward's input; prob, on, weight route_scores_forward's outputs. */
void route_backward(float *dout, float *dscore, const float *in, const float *prob,
                    const float *on, const float *weight, int N, int H, int D, int K,
                    float balance);

/* The scores' backward: dx (N, C) += dscore W, dW (H, C) += dscore^T x, db (H) +=
 * the column sums of dscore. */
void route_scores_backward(float *dx, float *dW, float *db, const float *dscore, const float *x,
                           const float *W, int N, int C, int H);

#endif
