/* layers: embedding, layernorm, GELU, residual, softmax/cross-entropy, dropout,
 * head dropout.
 * See layers.h for shapes and conventions. Row sums use 8 lanes over full
 * chunks, then a fixed lane tree, then the tail, so they vectorise without
 * letting the thread split change any result. */
#include "model/layers.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "model/config.h"
#include "util/rng.h"
#include "kernels/bf16_rows.h"
#include "kernels/vmath.h"

/* Below this many elements a pass runs on the calling thread: a parallel region costs
 * a few microseconds, more than a row or two of work (sampling runs one row). */
#define PARALLEL_MIN 16384

/* Sum of x[0..n) in a fixed order that depends only on n. */
static float row_sum(const float *x, int n)
{
    v8f acc = v8_set1(0.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        acc += v8_load(x + i);
    float s = v8_hsum(acc);
    for (; i < n; i++)
        s += x[i];
    return s;
}

/* Sum of (x[i] - m)^2, same order as row_sum. */
static float row_sqdev(const float *x, float m, int n)
{
    v8f acc = v8_set1(0.0f), mv = v8_set1(m);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f d = v8_load(x + i) - mv;
        acc += d * d;
    }
    float s = v8_hsum(acc);
    for (; i < n; i++)
        s += (x[i] - m) * (x[i] - m);
    return s;
}

void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                     int B, int T, int C)
{
    #pragma omp parallel for schedule(static) if ((long)B * T * C >= PARALLEL_MIN)
    for (int bt = 0; bt < B * T; bt++) {
        const float *e = wte + (size_t)tokens[bt] * C, *p = wpe + (size_t)(bt % T) * C;
        float *o = out + (size_t)bt * C;
        for (int c = 0; c < C; c++)
            o[c] = e[c] + p[c];
    }
}

/* Backward of out[b][t] = wte[tok] + wpe[t]: both gradients receive dout. A token
 * may occur at many positions, so threads split the channels, and each channel
 * sums its positions in (b, t) order. */
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                      int B, int T, int C)
{
    const int CB = 16;
    int nblocks = (C + CB - 1) / CB;
    #pragma omp parallel for schedule(static) if ((long)B * T * C >= PARALLEL_MIN)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        for (int bt = 0; bt < B * T; bt++) {
            const float *d = dout + (size_t)bt * C;
            float *g = dwte + (size_t)tokens[bt] * C;
            for (int c = c0; c < c1; c++)
                g[c] += d[c];
        }
        for (int t = 0; t < T; t++) {
            float *g = dwpe + (size_t)t * C;
            for (int b = 0; b < B; b++) {
                const float *d = dout + ((size_t)b * T + t) * C;
                for (int c = c0; c < c1; c++)
                    g[c] += d[c];
            }
        }
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *in, const float *w,
                       const float *b, int N, int C)
{
    layernorm_forward_rounded(out, mean, rstd, in, w, b, N, C, NULL, NULL);
}

void layernorm_forward_rounded(float *out, float *mean, float *rstd, const float *in,
                               const float *w, const float *b, int N, int C, Bf16Rows *r,
                               Bf16Rows *rc)
{
    assert(!r || r != rc);
    if (r)
        bf16_rows_start(r, out, N, C);
    int cols = rc ? bf16_rows_start_in_cols(rc, out, N, C) : 0;
    /* rows in blocks of BF16_COL_ROWS, one thread a block, as layernorm_backward_rounded
     * takes them, so that a finished block's columns are rounded while in cache */
    int nrb = (N + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
    #pragma omp parallel for schedule(static) if ((long)N * C >= PARALLEL_MIN)
    for (int rb = 0; rb < nrb; rb++) {
        int n0 = rb * BF16_COL_ROWS, n1 = N - n0 < BF16_COL_ROWS ? N : n0 + BF16_COL_ROWS;
        for (int n = n0; n < n1; n++) {
            const float *x = in + (size_t)n * C;
            float *o = out + (size_t)n * C;
            float m = row_sum(x, C) / (float)C;
            float var = row_sqdev(x, m, C) / (float)C;
            float s = 1.0f / sqrtf(var + 1e-5f);
            for (int c = 0; c < C; c++)
                o[c] = (x[c] - m) * s * w[c] + b[c];
            mean[n] = m;
            rstd[n] = s;
            if (r)
                bf16_rows_put(r, n, o);
        }
        if (cols)
            bf16_rows_put_cols(rc, n0, n1 - n0, out + (size_t)n0 * C);
    }
}

/* Backward of y = xhat * w + b with xhat = (x - mean) * rstd:
 *   dxhat = dy * w
 *   dx    = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
 *   dw   += sum_n dy * xhat,  db += sum_n dy.
 * Rows are independent for dx; dw and db sum over rows, so a second pass splits
 * the channels instead. */
void layernorm_backward(float *din, float *dw, float *db, const float *dout, const float *in,
                        const float *w, const float *mean, const float *rstd, int N, int C)
{
    layernorm_backward_rounded(din, dw, db, dout, in, w, mean, rstd, N, C, NULL);
}

void layernorm_backward_rounded(float *din, float *dw, float *db, const float *dout,
                                const float *in, const float *w, const float *mean,
                                const float *rstd, int N, int C, Bf16Rows *r)
{
    int cols = 0;
    if (r) {
        bf16_rows_start(r, din, N, C);
        cols = bf16_rows_start_cols(r);
    }
    /* rows in blocks of BF16_COL_ROWS, one thread a block, so that a finished block's
     * columns can be rounded together (a column's pair holds two rows) */
    int nrb = (N + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
    #pragma omp parallel if ((long)N * C >= PARALLEL_MIN)
    {
        float xhat[CONFIG_MAX_EMBD], dxhat[CONFIG_MAX_EMBD];
        #pragma omp for schedule(static)
        for (int rb = 0; rb < nrb; rb++) {
            int n0 = rb * BF16_COL_ROWS, n1 = N - n0 < BF16_COL_ROWS ? N : n0 + BF16_COL_ROWS;
            for (int n = n0; n < n1; n++) {
                const float *x = in + (size_t)n * C, *dy = dout + (size_t)n * C;
                float *dx = din + (size_t)n * C;
                float m = mean[n], s = rstd[n];
                for (int c = 0; c < C; c++) {
                    xhat[c] = (x[c] - m) * s;
                    dxhat[c] = dy[c] * w[c];
                }
                float mdx = row_sum(dxhat, C) / (float)C;
                float mdxx = vmath_dot(dxhat, xhat, C) / (float)C;
                for (int c = 0; c < C; c++)
                    dx[c] += s * (dxhat[c] - mdx - xhat[c] * mdxx);
                if (r)              /* the row's final sum: nothing else adds into it here */
                    bf16_rows_put(r, n, dx);
            }
            if (cols)
                bf16_rows_put_cols(r, n0, n1 - n0, din + (size_t)n0 * C);
        }
    }
    /* Columns in blocks of 32, the sums in registers (dw and db may not be kept in
     * registers through stores to them: the compiler must assume they alias). */
    enum { CB = 32, NV = CB / 8 };
    int nblocks = (C + CB - 1) / CB;
    #pragma omp parallel for schedule(static) if ((long)N * C >= PARALLEL_MIN)
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * CB;
        if (c0 + CB <= C) {
            v8f sw[NV], sb[NV];
            for (int v = 0; v < NV; v++) {
                sw[v] = v8_load(dw + c0 + 8 * v);
                sb[v] = v8_load(db + c0 + 8 * v);
            }
            for (int n = 0; n < N; n++) {
                const float *x = in + (size_t)n * C + c0, *dy = dout + (size_t)n * C + c0;
                v8f m = v8_set1(mean[n]), s = v8_set1(rstd[n]);
                for (int v = 0; v < NV; v++) {
                    v8f d = v8_load(dy + 8 * v);
                    sw[v] += d * ((v8_load(x + 8 * v) - m) * s);
                    sb[v] += d;
                }
            }
            for (int v = 0; v < NV; v++) {
                v8_store(dw + c0 + 8 * v, sw[v]);
                v8_store(db + c0 + 8 * v, sb[v]);
            }
        } else {
            for (int c = c0; c < C; c++) {
                float sw = dw[c], sb = db[c];
                for (int n = 0; n < N; n++) {
                    float d = dout[(size_t)n * C + c];
                    sw += d * ((in[(size_t)n * C + c] - mean[n]) * rstd[n]);
                    sb += d;
                }
                dw[c] = sw;
                db[c] = sb;
            }
        }
    }
}

/* Loads up to 8 floats (zeros past k) and stores back k: how the last partial
 * group of an element-wise pass goes through the same vector code as the rest. */
static v8f load_partial(const float *p, size_t k)
{
    float tmp[8] = {0};
    memcpy(tmp, p, k * sizeof(float));
    return v8_load(tmp);
}

static void store_partial(float *p, v8f v, size_t k)
{
    float tmp[8];
    v8_store(tmp, v);
    memcpy(p, tmp, k * sizeof(float));
}

void gelu_forward(float *out, const float *in, size_t n)
{
    size_t nv = (n + 7) / 8;
    #pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
    for (size_t i = 0; i < nv; i++) {
        size_t k = n - i * 8 < 8 ? n - i * 8 : 8;
        v8f x = k == 8 ? v8_load(in + i * 8) : load_partial(in + i * 8, k);
        v8f y = v8_gelu(x);
        if (k == 8)
            v8_store(out + i * 8, y);
        else
            store_partial(out + i * 8, y, k);
    }
}

/* Backward of y = gelu(x): din += dout * v8_gelu_grad(x) (vmath.h). */
void gelu_backward(float *din, const float *dout, const float *in, size_t n)
{
    size_t nv = (n + 7) / 8;
    #pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
    for (size_t i = 0; i < nv; i++) {
        size_t k = n - i * 8 < 8 ? n - i * 8 : 8, o = i * 8;
        v8f x = k == 8 ? v8_load(in + o) : load_partial(in + o, k);
        v8f d = k == 8 ? v8_load(dout + o) : load_partial(dout + o, k);
        v8f g = k == 8 ? v8_load(din + o) : load_partial(din + o, k);
        v8f r = g + d * v8_gelu_grad(x);
        if (k == 8)
            v8_store(din + o, r);
        else
            store_partial(din + o, r, k);
    }
}

void residual_forward(float *out, const float *a, const float *b, size_t n)
{
    #pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

/* The row softmax shared by cross-entropy and the sampler (layers.h). */
float softmax_row(float *p, const float *z, float mx, int V)
{
    v8f acc = v8_set1(0.0f), mv = v8_set1(mx);
    int v = 0;
    for (; v + 8 <= V; v += 8) {
        v8f e = v8_exp(v8_load(z + v) - mv);
        v8_store(p + v, e);
        acc += e;
    }
    if (v < V) {
        float tmp[8];
        for (int k = 0; k < 8; k++)
            tmp[k] = v + k < V ? z[v + k] : mx;
        v8f e = v8_exp(v8_load(tmp) - mv);
        for (int k = 0; v + k < V; k++) {
            p[v + k] = e[k];
            acc[k] += e[k];
        }
    }
    float sum = v8_hsum(acc);
    float inv = 1.0f / sum;
    for (int u = 0; u < V; u++)
        p[u] *= inv;
    return sum;
}

/* Softmax with max subtraction; loss = log(sum exp(z - max)) - (z_target - max). */
double crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                            int N, int V)
{
    #pragma omp parallel for schedule(static) if ((long)N * V >= PARALLEL_MIN)
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        float *p = probs + (size_t)n * V;
        float mx = z[0];
        for (int v = 1; v < V; v++)
            mx = z[v] > mx ? z[v] : mx;
        float sum = softmax_row(p, z, mx, V);
        if (targets)
            losses[n] = logf(sum) - (z[targets[n]] - mx);
    }
    if (!targets)
        return 0.0;
    double total = 0.0;
    for (int n = 0; n < N; n++)
        total += losses[n];
    return total / N;
}

/* Backward of loss = -log softmax(z)[target]: dz = probs - onehot(target). */
void crossentropy_backward(float *dlogits, const float *probs, const int *targets, int N, int V,
                           float scale)
{
    crossentropy_backward_rounded(dlogits, probs, targets, N, V, scale, NULL);
}

void crossentropy_backward_rounded(float *dlogits, const float *probs, const int *targets,
                                   int N, int V, float scale, Bf16Rows *r)
{
    int cols = 0;
    if (r) {
        bf16_rows_start(r, dlogits, N, V);
        cols = bf16_rows_start_cols(r);
    }
    /* rows in blocks, as layernorm_backward_rounded takes them (each row's sum is its
     * own, so the split changes no bit) */
    int nrb = (N + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
    #pragma omp parallel for schedule(static) if ((long)N * V >= PARALLEL_MIN)
    for (int rb = 0; rb < nrb; rb++) {
        int n0 = rb * BF16_COL_ROWS, n1 = N - n0 < BF16_COL_ROWS ? N : n0 + BF16_COL_ROWS;
        for (int n = n0; n < n1; n++) {
            const float *p = probs + (size_t)n * V;
            float *d = dlogits + (size_t)n * V;
            for (int v = 0; v < V; v++)
                d[v] += scale * (p[v] - (v == targets[n] ? 1.0f : 0.0f));
            if (r)
                bf16_rows_put(r, n, d);
        }
        if (cols)
            bf16_rows_put_cols(r, n0, n1 - n0, dlogits + (size_t)n0 * V);
    }
}

int dropout_keep(uint64_t key, uint64_t i, float p)
{
    /* Compare 24 uniform bits with p * 2^24: keep with probability 1 - p. */
    uint32_t u = (uint32_t)(rng_hash(key, i, 0) >> 40);
    return (float)u >= p * 16777216.0f;
}

void dropout_forward(float *out, const float *in, size_t n, float p, uint64_t key)
{
    float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    #pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        out[i] = (p > 0.0f && !dropout_keep(key, i, p)) ? 0.0f : in[i] * scale;
}

/* Backward of out = in * keep / (1 - p): din += dout * keep / (1 - p). */
void dropout_backward(float *din, const float *dout, size_t n, float p, uint64_t key)
{
    float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    #pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        if (p <= 0.0f || dropout_keep(key, i, p))
            din[i] += dout[i] * scale;
}

/* The same sum per element as dropout_backward (each element is one product added
 * once, so a split by rows gives its bits), a row at a time so that the row can be
 * rounded once complete, and a block of rows at a time for the columns. */
void dropout_backward_rounded(float *din, const float *dout, int N, int C, float p,
                              uint64_t key, Bf16Rows *r)
{
    if (!r) {
        dropout_backward(din, dout, (size_t)N * C, p, key);
        return;
    }
    float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    bf16_rows_start(r, din, N, C);
    int cols = bf16_rows_start_cols(r);
    /* rows in blocks, as layernorm_backward_rounded takes them */
    int nrb = (N + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
    #pragma omp parallel for schedule(static) if ((long)N * C >= PARALLEL_MIN)
    for (int rb = 0; rb < nrb; rb++) {
        int n0 = rb * BF16_COL_ROWS, n1 = N - n0 < BF16_COL_ROWS ? N : n0 + BF16_COL_ROWS;
        for (int n = n0; n < n1; n++) {
            size_t i0 = (size_t)n * C;
            for (size_t i = i0; i < i0 + (size_t)C; i++)
                if (p <= 0.0f || dropout_keep(key, i, p))
                    din[i] += dout[i] * scale;
            bf16_rows_put(r, n, din + i0);
        }
        if (cols)
            bf16_rows_put_cols(r, n0, n1 - n0, din + (size_t)n0 * C);
    }
}

/* y[b][t][hD..(h+1)D) *= keep_bh / (1 - p) for every (b, t, h); a dropped head's
 * values are set to +0 rather than multiplied, so even a non-finite input
 * contributes exactly 0. Rows are independent, and each element is one product,
 * so any thread split gives the same bits. */
static void head_mask(float *y, int B, int T, int H, int D, float p, uint64_t key)
{
    if (p <= 0.0f)
        return;
    float scale = 1.0f / (1.0f - p);
    size_t A = (size_t)H * D;
    #pragma omp parallel for schedule(static) if ((long)B * T * H * D >= PARALLEL_MIN)
    for (int n = 0; n < B * T; n++) {
        int b = n / T;
        float *y_n = y + (size_t)n * A;
        for (int h = 0; h < H; h++) {
            float m = dropout_keep(key, (uint64_t)b * H + h, p) ? scale : 0.0f;
            float *y_nh = y_n + (size_t)h * D;
            for (int d = 0; d < D; d++)
                y_nh[d] = m != 0.0f ? y_nh[d] * m : 0.0f;
        }
    }
}

void head_dropout_forward(float *y, int B, int T, int H, int D, float p, uint64_t key)
{
    head_mask(y, B, T, H, D, p, key);
}

/* In the forward pass this was y' = m_bh y (m_bh = keep_bh / (1 - p), a constant
 * per (b, h)), so dL/dy = m_bh dL/dy': the same mask, recomputed from the key. */
void head_dropout_backward(float *dy, int B, int T, int H, int D, float p, uint64_t key)
{
    head_mask(dy, B, T, H, D, p, key);
}
