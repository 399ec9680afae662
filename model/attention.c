/* attention: causal multi-head self-attention (see attention.h).
 * Work is split over (batch, head) pairs: each pair is one thread's, so every
 * sum inside it has a fixed order. Query rows are processed in blocks of RB;
 * a block needs keys only up to its last row. */
#include "attention.h"

#include <math.h>
#include <string.h>

#include "layers.h"
#include "matmul.h"
#include "vmath.h"

#define RB 16

void attention_softmax_row(float *s, int n, float scale)
{
    float mx = s[0] * scale;
    for (int j = 1; j < n; j++)
        mx = s[j] * scale > mx ? s[j] * scale : mx;
    v8f acc = v8_set1(0.0f), mv = v8_set1(mx), sv = v8_set1(scale);
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        v8f e = v8_exp(v8_load(s + j) * sv - mv);
        v8_store(s + j, e);
        acc += e;
    }
    if (j < n) {
        float tmp[8];
        for (int k = 0; k < 8; k++)
            tmp[k] = j + k < n ? s[j + k] : 0.0f;
        v8f e = v8_exp(v8_load(tmp) * sv - mv);
        for (int k = 0; j + k < n; k++) {
            s[j + k] = e[k];
            acc[k] += e[k];
        }
    }
    float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    float inv = 1.0f / sum;
    for (j = 0; j < n; j++)
        s[j] *= inv;
}

/* Row i of S (scores, unscaled) becomes softmax(S * scale) over j <= i; the rest
 * of the row (up to T) is zeroed. */
static void causal_softmax_row(float *s, int i, int T, float scale)
{
    attention_softmax_row(s, i + 1, scale);
    memset(s + i + 1, 0, (size_t)(T - i - 1) * sizeof(float));
}

void attention_forward(float *out, float *att, float *attd, const float *qkv,
                       int B, int T, int H, int D, float p, uint64_t key)
{
    int A = H * D, ld = 3 * A;
    float scale = 1.0f / sqrtf((float)D);
    float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * T * ld + (size_t)h * D;
            const float *k = q + A, *v = q + 2 * A;
            size_t att_off = ((size_t)b * H + h) * T * T;
            float *P = att + att_off;
            float *Pd = p > 0.0f ? attd + att_off : P;
            float *y = out + (size_t)b * T * A + (size_t)h * D;
            for (int i0 = 0; i0 < T; i0 += RB) {
                int m = T - i0 < RB ? T - i0 : RB, ncols = i0 + m;
                matmul_nt(m, ncols, D, q + (size_t)i0 * ld, ld, k, ld, P + (size_t)i0 * T, T, 0);
                for (int i = i0; i < i0 + m; i++) {
                    causal_softmax_row(P + (size_t)i * T, i, T, scale);
                    if (p > 0.0f)
                        for (int j = 0; j < T; j++) {
                            size_t idx = att_off + (size_t)i * T + j;
                            Pd[(size_t)i * T + j] = dropout_keep(key, idx, p)
                                                    ? P[(size_t)i * T + j] * keep_scale : 0.0f;
                        }
                }
                matmul_nn(m, D, ncols, Pd + (size_t)i0 * T, T, v, ld, y + (size_t)i0 * A, A, 0);
            }
        }
}

/* Backward of y = Pd v, Pd = dropout(P), P = softmax(scale * q k^T) (causal):
 *   dPd = dy v^T;  dv += Pd^T dy;  dP = dPd * keep / (1 - p)
 *   dS  = P * (dP - sum_j P dP) * scale   (softmax backward, row-wise)
 *   dq += dS k;    dk += dS^T q. */
void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv,
                        const float *att, const float *attd, int B, int T, int H, int D, float p)
{
    int A = H * D, ld = 3 * A;
    float scale = 1.0f / sqrtf((float)D);
    float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t qoff = (size_t)b * T * ld + (size_t)h * D;
            const float *q = qkv + qoff, *k = q + A, *v = q + 2 * A;
            float *dq = dqkv + qoff, *dk = dq + A, *dv = dq + 2 * A;
            size_t att_off = ((size_t)b * H + h) * T * T;
            const float *P = att + att_off;
            const float *Pd = p > 0.0f ? attd + att_off : P;
            float *dS = datt + att_off;
            const float *dy = dout + (size_t)b * T * A + (size_t)h * D;
            for (int i0 = 0; i0 < T; i0 += RB) {
                int m = T - i0 < RB ? T - i0 : RB, ncols = i0 + m;
                matmul_nt(m, ncols, D, dy + (size_t)i0 * A, A, v, ld, dS + (size_t)i0 * T, T, 0);
                for (int i = i0; i < i0 + m; i++) {
                    float *ds = dS + (size_t)i * T;
                    const float *pr = P + (size_t)i * T, *pdr = Pd + (size_t)i * T;
                    if (p > 0.0f)
                        for (int j = 0; j <= i; j++)
                            ds[j] = pdr[j] != 0.0f ? ds[j] * keep_scale : 0.0f;
                    float dot = 0.0f;
                    for (int j = 0; j <= i; j++)
                        dot += pr[j] * ds[j];
                    for (int j = 0; j <= i; j++)
                        ds[j] = pr[j] * (ds[j] - dot) * scale;
                    for (int j = i + 1; j < ncols; j++)
                        ds[j] = 0.0f;
                }
                matmul_nn(m, D, ncols, dS + (size_t)i0 * T, T, k, ld, dq + (size_t)i0 * ld, ld, 1);
            }
            for (int j0 = 0; j0 < T; j0 += RB) {
                int m = T - j0 < RB ? T - j0 : RB;
                matmul_tn(m, D, T - j0, dS + (size_t)j0 * T + j0, T, q + (size_t)j0 * ld, ld,
                         dk + (size_t)j0 * ld, ld, 1);
                matmul_tn(m, D, T - j0, Pd + (size_t)j0 * T + j0, T, dy + (size_t)j0 * A, A,
                         dv + (size_t)j0 * ld, ld, 1);
            }
        }
}
