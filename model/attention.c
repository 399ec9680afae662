/* attention: causal multi-head self-attention (see attention.h).
 * Work is split over (batch, head) pairs: each pair is one thread's, so every
 * sum inside it has a fixed order. The products are matmul.h's causal ones, which
 * skip the masked half. */
#include "model/attention.h"

#include <math.h>
#include <string.h>

#include "model/layers.h"
#include "kernels/matmul.h"
#include "kernels/vmath.h"

void attention_softmax_row(float *s, int n, float scale)
{
    v8f sv = v8_set1(scale), mx8 = v8_set1(-INFINITY);
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        v8f x = v8_load(s + j) * sv;
        mx8 = v8_select(x > mx8, x, mx8);
    }
    float mx = -INFINITY;
    for (int k = 0; k < 8; k++)
        mx = mx8[k] > mx ? mx8[k] : mx;
    for (int k = j; k < n; k++)
        mx = s[k] * scale > mx ? s[k] * scale : mx;
    v8f acc = v8_set1(0.0f), mv = v8_set1(mx);
    j = 0;
#if defined(__AVX512F__)
    /* 16 lanes at a time where a register holds them (half the instructions of exp):
     * each lane's exp is the 8-lane one's, and the sum takes the halves in order. */
    v16f sv16 = v16_set1(scale), mv16 = v16_set1(mx);
    for (; j + 16 <= n; j += 16) {
        v16f e = v16_exp(v16_load(s + j) * sv16 - mv16);
        v16_store(s + j, e);
        acc = v8_add_halves(acc, e);
    }
#endif
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
    float sum = v8_hsum(acc);
    v8f inv = v8_set1(1.0f / sum);
    j = 0;
#if defined(__AVX512F__)
    for (v16f inv16 = v16_set1(inv[0]); j + 16 <= n; j += 16)
        v16_store(s + j, v16_load(s + j) * inv16);
#endif
    for (; j + 8 <= n; j += 8)
        v8_store(s + j, v8_load(s + j) * inv);
    for (; j < n; j++)
        s[j] *= inv[0];
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
            matmul_nt_causal(T, D, q, ld, k, ld, P, T, 0);
            for (int i = 0; i < T; i++) {
                causal_softmax_row(P + (size_t)i * T, i, T, scale);
                if (p > 0.0f)
                    for (int j = 0; j < T; j++) {
                        size_t idx = att_off + (size_t)i * T + j;
                        Pd[(size_t)i * T + j] = dropout_keep(key, idx, p)
                                                ? P[(size_t)i * T + j] * keep_scale : 0.0f;
                    }
            }
            matmul_nn_causal(T, D, Pd, T, v, ld, y, A, 0);
        }
}

/* Backward of y = Pd v, Pd = dropout(P), P = softmax(scale * q k^T) (causal):
 *   dPd = dy v^T;  dv = Pd^T dy;  dP = dPd * keep / (1 - p)
 *   dS  = P * (dP - sum_j P dP) * scale   (softmax backward, row-wise)
 *   dq = dS k;     dk = dS^T q.
 * dS is kept lower triangular (zeros above the diagonal), as the causal products
 * that read it require. */
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
            matmul_nt_causal(T, D, dy, A, v, ld, dS, T, 0);
            for (int i = 0; i < T; i++) {
                float *ds = dS + (size_t)i * T;
                const float *pr = P + (size_t)i * T, *pdr = Pd + (size_t)i * T;
                if (p > 0.0f)
                    for (int j = 0; j <= i; j++)
                        ds[j] = pdr[j] != 0.0f ? ds[j] * keep_scale : 0.0f;
                float dot = vmath_dot(pr, ds, i + 1);
                for (int j = 0; j <= i; j++)
                    ds[j] = pr[j] * (ds[j] - dot) * scale;
                memset(ds + i + 1, 0, (size_t)(T - i - 1) * sizeof(float));
            }
            matmul_nn_causal(T, D, dS, T, k, ld, dq, ld, 0);
            matmul_tn_causal(T, D, dS, T, q, ld, dk, ld, 0);
            matmul_tn_causal(T, D, Pd, T, dy, A, dv, ld, 0);
        }
}
