/* adamw: see adamw.h. Every loop is element-wise except the norm, whose chunking
 * depends only on n so any thread count gives the same bits. */
#include "trainer/adamw.h"

#include <math.h>
#include <string.h>

typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

#define NORM_CHUNKS 256

double grad_global_norm(const float *g, size_t n)
{
    double partial[NORM_CHUNKS];
    size_t chunk = (n + NORM_CHUNKS - 1) / NORM_CHUNKS;
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < NORM_CHUNKS; k++) {
        size_t lo = (size_t)k * chunk, hi = lo + chunk < n ? lo + chunk : n;
        /* Four lanes (i mod 4 within the chunk), joined as (l0 + l1) + (l2 + l3), then
         * the tail in order: vectorisable, and still fixed by n alone. */
        v4d acc = {0.0, 0.0, 0.0, 0.0};
        size_t i = lo;
        for (; i + 4 <= hi; i += 4) {
            v4f x;
            memcpy(&x, g + i, sizeof x);
            v4d d = __builtin_convertvector(x, v4d);
            acc += d * d;
        }
        double s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        for (; i < hi; i++)
            s += (double)g[i] * g[i];
        partial[k] = s;
    }
    double total = 0.0;
    for (int k = 0; k < NORM_CHUNKS; k++)
        total += partial[k];
    return sqrt(total);
}

double grad_clip(float *g, size_t n, float clip)
{
    double norm = grad_global_norm(g, n);
    if (clip > 0.0f) {
        double coef = clip / (norm + 1e-6);
        if (coef < 1.0) {
            float cf = (float)coef;
            #pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++)
                g[i] *= cf;
        }
    }
    return norm;
}

void adamw_update(float *params, const float *grads, float *m, float *v, const ParamTable *table,
                  const AdamW *opt, float lr, long t)
{
    float b1 = opt->beta1, b2 = opt->beta2, eps = opt->eps;
    float c1 = (float)(1.0 - pow(b1, (double)t)), c2 = (float)(1.0 - pow(b2, (double)t));
    /* One parallel region for all tensors; the loops are element-wise, so threads go
     * from one tensor to the next without waiting (nowait). */
    #pragma omp parallel
    for (int k = 0; k < table->n; k++) {
        const ParamSpec *s = &table->spec[k];
        float lr_k = lr * s->lr_scale;
        float decay = s->decay ? 1.0f - lr_k * opt->weight_decay : 1.0f;
        float *restrict p = params + s->offset, *restrict mk = m + s->offset;
        float *restrict vk = v + s->offset;
        const float *restrict g = grads + s->offset;
        #pragma omp for schedule(static) nowait
        for (size_t i = 0; i < s->count; i++) {
            float gi = g[i];
            mk[i] = b1 * mk[i] + (1.0f - b1) * gi;
            vk[i] = b2 * vk[i] + (1.0f - b2) * gi * gi;
            float mhat = mk[i] / c1, vhat = vk[i] / c2;
            p[i] = p[i] * decay - lr_k * mhat / (sqrtf(vhat) + eps);
        }
    }
}
