/* adamw: see adamw.h. Every loop is element-wise except the norm, whose chunking
 * depends only on n so any thread count gives the same bits; the bf16 copies' column
 * minima are minima of integers, the same in any order. */
#include "trainer/adamw.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

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

/* The update of elements [lo, hi) of one tensor. */
typedef struct {
    float b1, b2, eps, c1, c2, lr, decay;
} Step;

static inline void update_range(float *restrict p, const float *restrict g, float *restrict m,
                                float *restrict v, const Step *s, size_t lo, size_t hi)
{
    float b1 = s->b1, b2 = s->b2, eps = s->eps, c1 = s->c1, c2 = s->c2, lr = s->lr;
    float decay = s->decay;
    for (size_t i = lo; i < hi; i++) {
        float gi = g[i];
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float mhat = m[i] / c1, vhat = v[i] / c2;
        p[i] = p[i] * decay - lr * mhat / (sqrtf(vhat) + eps);
    }
}

void adamw_update(float *params, const float *grads, float *m, float *v, const ParamTable *table,
                  const AdamW *opt, float lr, long t)
{
    adamw_update_bf16(params, grads, m, v, table, opt, lr, t, NULL);
}

void adamw_update_bf16(float *params, const float *grads, float *m, float *v,
                       const ParamTable *table, const AdamW *opt, float lr, long t,
                       Bf16WeightSet *copies)
{
    float c1 = (float)(1.0 - pow(opt->beta1, (double)t));
    float c2 = (float)(1.0 - pow(opt->beta2, (double)t));
    /* One parallel region for all tensors; the loops are element-wise, so threads go
     * from one tensor to the next without waiting (nowait). A tensor with a bf16 copy
     * is updated a row at a time, each row rounded into the copy while it is in cache,
     * in the copy's blocks of rows. */
    #pragma omp parallel
    for (int k = 0; k < table->n; k++) {
        const ParamSpec *s = &table->spec[k];
        float lr_k = lr * s->lr_scale;
        Step st = { opt->beta1, opt->beta2, opt->eps, c1, c2, lr_k,
                    s->decay ? 1.0f - lr_k * opt->weight_decay : 1.0f };
        float *p = params + s->offset, *mk = m + s->offset, *vk = v + s->offset;
        const float *g = grads + s->offset;
        Bf16Weight *c = copies && k < copies->n && copies->w[k].W ? &copies->w[k] : NULL;
        if (c) {
            assert(c->W == p && c->OC == s->rows && c->IC == s->cols);
            size_t cols = (size_t)s->cols;
            #pragma omp for schedule(static) nowait
            for (int part = 0; part < BF16_WEIGHT_PARTS; part++) {
                int o0, o1;
                bf16_weight_part(c, part, &o0, &o1);
                for (int o = o0; o < o1; o++) {
                    update_range(p, g, mk, vk, &st, (size_t)o * cols, (size_t)(o + 1) * cols);
                    bf16_weight_row(c, o, part);
                }
            }
        } else {                /* a static split by hand: one loop to vectorise */
            int nth = 1, tid = 0;
#ifdef _OPENMP
            nth = omp_get_num_threads(), tid = omp_get_thread_num();
#endif
            update_range(p, g, mk, vk, &st, s->count * tid / nth, s->count * (tid + 1) / nth);
        }
    }
}
