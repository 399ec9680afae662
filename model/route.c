/* route: the router's scores, top-K choice, weights and balance loss, forward and
 * backward (see route.h). Work is split over tokens (or, for the router's weight
 * gradient, over heads), so every sum is one thread's, in a fixed order. */
#include "model/route.h"

#include <math.h>
#include <stddef.h>

#include "kernels/vmath.h"
#include "model/config.h"

/* Below this many multiply-adds a layer's routing runs in the calling thread. */
#define ROUTE_PARALLEL_MIN 16384

/* Whether head h is among the K largest of s[0..H), a tie going to the lower
 * index: fewer than K heads rank above it. */
static int chosen(const double *s, int H, int K, int h)
{
    int above = 0;
    for (int j = 0; j < H; j++)
        above += s[j] > s[h] || (j < h && s[j] == s[h]);
    return above < K;
}

double route_scores_forward(float *prob, float *on, float *weight, const float *x,
                            const float *W, const float *b, int N, int C, int H, int K)
{
    #pragma omp parallel for schedule(static) if ((long)N * H * C >= ROUTE_PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        const float *x_n = x + (size_t)n * C;
        float *p_n = prob + (size_t)n * H, *on_n = on + (size_t)n * H;
        float *w_n = weight + (size_t)n * H;
        double s[CONFIG_MAX_HEADS], e[CONFIG_MAX_HEADS], mx = -INFINITY;
        for (int h = 0; h < H; h++) {
            s[h] = (double)b[h] + vmath_dot(W + (size_t)h * C, x_n, C);
            mx = s[h] > mx ? s[h] : mx;
        }
        /* exp(s - max): the top score's term is exactly 1, so with K = 1 the
         * chosen weight is 1 / 1. */
        double z = 0.0, zk = 0.0;
        for (int h = 0; h < H; h++) {
            e[h] = exp(s[h] - mx);
            z += e[h];
            on_n[h] = chosen(s, H, K, h) ? 1.0f : 0.0f;
            if (on_n[h] != 0.0f)
                zk += e[h];
        }
        for (int h = 0; h < H; h++) {
            p_n[h] = (float)(e[h] / z);
            w_n[h] = on_n[h] != 0.0f ? (float)(e[h] / zk) : 0.0f;
        }
    }
    /* H sum_h f_h P_h, with f_h = count_h / (N K) and P_h = sum_n p_nh / N. */
    double loss = 0.0;
    for (int h = 0; h < H; h++) {
        double count = 0.0, psum = 0.0;
        for (int n = 0; n < N; n++) {
            count += on[(size_t)n * H + h];
            psum += prob[(size_t)n * H + h];
        }
        loss += (count / ((double)N * K)) * (psum / N);
    }
    return (double)H * loss;
}

void route_forward(float *out, const float *in, const float *on, const float *weight, int N,
                   int H, int D)
{
    size_t A = (size_t)H * D;
    #pragma omp parallel for schedule(static) if ((long)N * H * D >= ROUTE_PARALLEL_MIN)
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            size_t at = (size_t)n * A + (size_t)h * D, nh = (size_t)n * H + h;
            float g = weight[nh];
            for (int d = 0; d < D; d++)
                out[at + d] = on[nh] != 0.0f ? g * in[at + d] : 0.0f;
        }
}

/* In the forward pass this was out_h = g_h in_h for the chosen heads (0 for the
 * others), g = softmax over the chosen scores, p = softmax over all scores, and
 * the balance loss H sum_h f_h P_h. So, per token:
 *   dL/din_h = g_h dL/dout_h,   dg_h = sum_d dL/dout_h in_h   (chosen h)
 *   ds_h = g_h (dg_h - sum_{chosen j} g_j dg_j)               (chosen h; 0 else)
 *        + p_h (c_h - sum_j p_j c_j),  c_h = balance H f_h / N = d(balance loss)/dp_h
 * (the softmax backward twice: over the chosen heads, then over all). */
void route_backward(float *dout, float *dscore, const float *in, const float *prob,
                    const float *on, const float *weight, int N, int H, int D, int K,
                    float balance)
{
    size_t A = (size_t)H * D;
    double cb[CONFIG_MAX_HEADS];
    for (int h = 0; h < H; h++) {
        double count = 0.0;
        for (int n = 0; n < N; n++)
            count += on[(size_t)n * H + h];
        cb[h] = (double)balance * H * (count / ((double)N * K)) / N;
    }
    #pragma omp parallel for schedule(static) if ((long)N * H * D >= ROUTE_PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        const float *on_n = on + (size_t)n * H, *g_n = weight + (size_t)n * H;
        const float *p_n = prob + (size_t)n * H;
        double dg[CONFIG_MAX_HEADS], gdot = 0.0, pdot = 0.0;
        for (int h = 0; h < H; h++) {
            size_t at = (size_t)n * A + (size_t)h * D;
            double acc = 0.0;
            if (on_n[h] != 0.0f)
                for (int d = 0; d < D; d++) {
                    acc += (double)dout[at + d] * in[at + d];
                    dout[at + d] *= g_n[h];
                }
            else
                for (int d = 0; d < D; d++)
                    dout[at + d] = 0.0f;
            dg[h] = acc;
            gdot += (double)g_n[h] * acc;
            pdot += (double)p_n[h] * cb[h];
        }
        for (int h = 0; h < H; h++) {
            double ds = on_n[h] != 0.0f ? (double)g_n[h] * (dg[h] - gdot) : 0.0;
            ds += (double)p_n[h] * (cb[h] - pdot);
            dscore[(size_t)n * H + h] = (float)ds;
        }
    }
}

/* In the forward pass this was s = W x + b per token. A token's dx is one
 * thread's, summed over the heads in order; dW's row h and db[h] are one
 * thread's, summed over the tokens in order. */
void route_scores_backward(float *dx, float *dW, float *db, const float *dscore, const float *x,
                           const float *W, int N, int C, int H)
{
    int par = (long)N * H * C >= ROUTE_PARALLEL_MIN;
    #pragma omp parallel for schedule(static) if (par)
    for (int n = 0; n < N; n++) {
        const float *ds_n = dscore + (size_t)n * H;
        float *dx_n = dx + (size_t)n * C;
        for (int h = 0; h < H; h++) {
            const float *W_h = W + (size_t)h * C;
            float g = ds_n[h];
            for (int c = 0; c < C; c++)
                dx_n[c] += g * W_h[c];
        }
    }
    #pragma omp parallel for schedule(static) if (par)
    for (int h = 0; h < H; h++) {
        float *dW_h = dW + (size_t)h * C;
        double bsum = 0.0;
        for (int n = 0; n < N; n++) {
            float g = dscore[(size_t)n * H + h];
            const float *x_n = x + (size_t)n * C;
            bsum += g;
            for (int c = 0; c < C; c++)
                dW_h[c] += g * x_n[c];
        }
        db[h] += (float)bsum;
    }
}
