/* gates: learned head gates, a hard-concrete variable per layer and head
 * (Louizos et al. 2018, as Voita et al. 2019 use it on attention heads).
 *
 * Each head h of layer l has a learned log_alpha; its gate z multiplies the
 * head's output before the output projection. In training z is drawn:
 *   u ~ U(0, 1) from a key,  s = sigmoid((ln u - ln(1 - u) + log_alpha) / beta),
 *   z = clamp(s (zeta - gamma) + gamma, 0, 1);
 * at evaluation it is the deterministic
 *   z = clamp(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1),
 * and a head whose gate is 0 is closed. The penalty that pushes gates shut is
 * the expected number of non-zero gates (the expected L0 norm),
 *   sum over heads of sigmoid(log_alpha - beta ln(-gamma / zeta)).
 * What the learning rate and the initial log_alpha are, and why, is in
 * docs/heads.md. This file holds the maths only: where the gates sit in the
 * model is gpt.c's, when the penalty is added is the trainer's. */
#ifndef HEADCOUNT_GATES_H
#define HEADCOUNT_GATES_H

#include <stddef.h>
#include <stdint.h>

/* The hard-concrete's temperature and stretch (Louizos et al. 2018's values). */
#define GATE_BETA (2.0 / 3.0)
#define GATE_GAMMA (-0.1)
#define GATE_ZETA 1.1
/* log_alpha at init: sigmoid(3) (zeta - gamma) + gamma = 1.04, so every
 * evaluation gate starts fully open (1), and a drawn gate is 1 with probability
 * sigmoid(3 - beta logit((1 - gamma) / (zeta - gamma))) = 0.80. */
#define GATE_LOG_ALPHA_INIT 3.0f
/* log_alpha learns at this multiple of the learning rate (docs/heads.md). */
#define GATE_LR_SCALE 10.0f

/* The evaluation gate of one head; *dz (when not NULL) gets dz/dlog_alpha, 0
 * where the clamp holds z at 0 or 1. */
float gate_eval(float log_alpha, float *dz);
/* The drawn gate of draw i under key (u from rng_hash(key, i, 0), strictly inside
 * (0, 1)); *dz as above. */
float gate_sample(float log_alpha, uint64_t key, uint64_t i, float *dz);

/* z[b][h] and dz[b][h] = dz/dlog_alpha[h] for the B sequences of one layer:
 * drawn (draw b H + h under key) when noise is set, else the evaluation gate
 * (the same for every b). log_alpha (H). */
void gates_draw(float *z, float *dz, const float *log_alpha, int B, int H, int noise,
                uint64_t key);

/* out[b][t][hD + d] = z[b][h] in[b][t][hD + d]: the gated heads' outputs.
 * out, in (B, T, H*D); z (B, H). out and in must not alias. */
void gates_forward(float *out, const float *in, const float *z, int B, int T, int H, int D);
/* The backward of gates_forward, in place on dout (B, T, H*D), which enters as
 * dL/dout and leaves as dL/din = z dL/dout; dlog_alpha (H) += sum_b dz[b][h]
 * sum_{t,d} dout[b][t][hD + d] in[b][t][hD + d]. in is the forward's input. */
void gates_backward(float *dout, float *dlog_alpha, const float *in, const float *z,
                    const float *dz, int B, int T, int H, int D);

/* How many of n heads are open: evaluation gate above 0. */
int gates_open(const float *log_alpha, size_t n);

/* lambda times the expected L0 norm of n gates, returned; adds its gradient
 * lambda sigmoid'(log_alpha - beta ln(-gamma / zeta)) into dlog_alpha[n] (when
 * not NULL). Summed in order in double. */
double gates_penalty(const float *log_alpha, float *dlog_alpha, size_t n, float lambda);

#endif
