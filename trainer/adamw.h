/* adamw: gradient clipping by global norm and the AdamW update.
 *
 * Decoupled weight decay as in Loshchilov & Hutter 2019 and PyTorch's AdamW:
 *   p <- p (1 - lr wd)   [only tensors whose table entry has decay = 1]
 *   m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
 *   p <- p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * where lr is the learning rate times the tensor's lr_scale (1 but for the head
 * gates). Moments share the parameters' layout (params.h). */
#ifndef HEADCOUNT_ADAMW_H
#define HEADCOUNT_ADAMW_H

#include <stddef.h>

#include "kernels/bf16_weight.h"
#include "model/params.h"

typedef struct {
    float beta1, beta2, eps, weight_decay;
} AdamW;

/* sqrt(sum g^2) in double, summed over fixed chunks (independent of the thread
 * count) and then across chunks in order. */
double grad_global_norm(const float *g, size_t n);

/* Scales g by clip / (norm + 1e-6) when that is below 1 (as torch's
 * clip_grad_norm_); clip <= 0 disables. Returns the norm before clipping. */
double grad_clip(float *g, size_t n, float clip);

/* One update at 1-based step t with learning rate lr. */
void adamw_update(float *params, const float *grads, float *m, float *v, const ParamTable *table,
                  const AdamW *opt, float lr, long t);

/* The same, also writing the bf16 copies of the tensors copies->w[k] copies
 * (kernels/bf16_weight.h; copies NULL: none) from their updated rows, row by row in
 * the update's own pass (--precision bf16: the layers then read them instead of
 * rounding the weights at every call). The parameters' bits are adamw_update's. */
void adamw_update_bf16(float *params, const float *grads, float *m, float *v,
                       const ParamTable *table, const AdamW *opt, float lr, long t,
                       Bf16WeightSet *copies);

#endif
