/* adamw: see adamw.h. Every loop is element-wise except the norm, whose chunking
 * depends only on n so any thread count gives the same bits. */
#include "adamw.h"

#include <math.h>

#define NORM_CHUNKS 256

double grad_global_norm(const float *g, size_t n)
{
    double partial[NORM_CHUNKS];
    size_t chunk = (n + NORM_CHUNKS - 1) / NORM_CHUNKS;
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < NORM_CHUNKS; k++) {
        size_t lo = (size_t)k * chunk, hi = lo + chunk < n ? lo + chunk : n;
        double s = 0.0;
        for (size_t i = lo; i < hi; i++)
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
    for (int k = 0; k < table->n; k++) {
        const ParamSpec *s = &table->spec[k];
        float decay = s->decay ? 1.0f - lr * opt->weight_decay : 1.0f;
        float *p = params + s->offset, *mk = m + s->offset, *vk = v + s->offset;
        const float *g = grads + s->offset;
        #pragma omp parallel for schedule(static) if (s->count > 4096)
        for (size_t i = 0; i < s->count; i++) {
            float gi = g[i];
            mk[i] = b1 * mk[i] + (1.0f - b1) * gi;
            vk[i] = b2 * vk[i] + (1.0f - b2) * gi * gi;
            float mhat = mk[i] / c1, vhat = vk[i] / c2;
            p[i] = p[i] * decay - lr * mhat / (sqrtf(vhat) + eps);
        }
    }
}
