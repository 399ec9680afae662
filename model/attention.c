/* attention: causal multi-head self-attention (see attention.h).
 * Work is split over (batch, head) pairs: each pair is one thread's, so every
 * sum inside it has a fixed order. The products are matmul.h's causal ones, which
 * skip the masked half; the routed passes gather a head's routed query rows and use
 * the *_causal_rows products on them. A row of the output is finished only when every
 * head has written its slice, so the _rounded variants round the rows (bf16) after the
 * pairs, in the same parallel region (the backward dqkv's columns too, a block of rows
 * at a time); the rows a thread rounds are mostly those of the sequences whose pairs it
 * ran (measured on a Zen 3 at about the cost of the reader's own pass:
 * docs/matmul.md). */
#include "model/attention.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "model/layers.h"
#include "kernels/bf16_rows.h"
#include "kernels/matmul.h"
#include "kernels/vmath.h"
#include "util/scratch.h"

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

/* r started on x[N][K] when r has room for it, else r dropped and NULL (the reader
 * then rounds x itself). */
static Bf16Rows *rows_begin(Bf16Rows *r, const float *x, int N, int K)
{
    if (!r)
        return NULL;
    if (!bf16_rows_fits(r, N, K)) {
        bf16_rows_drop(r);
        return NULL;
    }
    bf16_rows_start(r, x, N, K);
    return r;
}

/* Inside a parallel region, once x[N][K] is final: its rows into r (NULL: none), split
 * among the threads as the pairs were (static, in order), each row by the per-row
 * function of the products' own pass; the rows go in blocks of BF16_COL_ROWS, and with
 * rc (a copy started to hold x's columns: r itself, or one of its own; NULL: none) each
 * block's columns are rounded once its rows are, while the block is in cache. */
static void rows_round(Bf16Rows *r, Bf16Rows *rc, const float *x, int N, int K)
{
    int nrb = (N + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
    #pragma omp for schedule(static)
    for (int rb = 0; rb < nrb; rb++) {
        int n0 = rb * BF16_COL_ROWS, n1 = N - n0 < BF16_COL_ROWS ? N : n0 + BF16_COL_ROWS;
        if (r)
            for (int n = n0; n < n1; n++)
                bf16_rows_put(r, n, x + (size_t)n * K);
        if (rc)
            bf16_rows_put_cols(rc, n0, n1 - n0, x + (size_t)n0 * K);
    }
}

/* One (batch, head) pair at every query row: q, k, v its views of qkv (row stride
 * ld), P and Pd its T x T weights before and after dropout (Pd = P without dropout),
 * y its output (row stride A); att_off P's offset in att, for the dropout masks. */
static void pair_forward(float *y, float *P, float *Pd, const float *q, const float *k,
                         const float *v, int T, int D, int A, int ld, float p, uint64_t key,
                         size_t att_off)
{
    float scale = 1.0f / sqrtf((float)D);
    float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
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

void attention_forward(float *out, float *att, float *attd, const float *qkv,
                       int B, int T, int H, int D, float p, uint64_t key)
{
    attention_forward_rounded(out, att, attd, qkv, B, T, H, D, p, key, NULL, NULL);
}

void attention_forward_rounded(float *out, float *att, float *attd, const float *qkv,
                               int B, int T, int H, int D, float p, uint64_t key, Bf16Rows *r,
                               Bf16Rows *rc)
{
    int A = H * D, ld = 3 * A;
    assert(!r || r != rc);
    r = rows_begin(r, out, B * T, A);
    if (rc && !bf16_rows_start_in_cols(rc, out, B * T, A))
        rc = NULL;
    #pragma omp parallel
    {
        #pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const float *q = qkv + (size_t)b * T * ld + (size_t)h * D;
                size_t att_off = ((size_t)b * H + h) * T * T;
                float *P = att + att_off;
                pair_forward(out + (size_t)b * T * A + (size_t)h * D, P,
                             p > 0.0f ? attd + att_off : P, q, q + A, q + 2 * A, T, D, A, ld, p,
                             key, att_off);
            }
        if (r || rc)
            rows_round(r, rc, out, B * T, A);
    }
}

/* The positions of sequence b at which on[b T + i][h] is (want != 0) nonzero: rows[0..n),
 * ascending; returns n. */
static int pick_rows(int *rows, const float *on, int b, int T, int H, int h, int want)
{
    int n = 0;
    for (int i = 0; i < T; i++)
        if ((on[((size_t)b * T + i) * H + h] != 0.0f) == (want != 0))
            rows[n++] = i;
    return n;
}

/* S[r][0..T) <- the causal softmax row of position rows[r] (zeros past it), for the
 * M rows: the scores of the gathered query rows Qc (M, D) against k. */
static void rows_softmax(float *S, const float *Qc, const int *rows, int M, const float *k,
                         int T, int D, int ld)
{
    float scale = 1.0f / sqrtf((float)D);
    matmul_nt_causal_rows(M, rows, D, Qc, D, k, ld, S, T);
    for (int r = 0; r < M; r++)
        causal_softmax_row(S + (size_t)r * T, rows[r], T, scale);
}

/* Gathers the rows rows[0..M) of x (row stride ld, n floats each) into xc (M, n). */
static void gather_rows(float *xc, const float *x, size_t ld, const int *rows, int M, int n)
{
    for (int r = 0; r < M; r++)
        memcpy(xc + (size_t)r * n, x + (size_t)rows[r] * ld, (size_t)n * sizeof(float));
}

/* Zeroes the rows of x (row stride ld, n floats each) that are not in rows[0..M). */
static void zero_other_rows(float *x, size_t ld, const int *rows, int M, int T, int n)
{
    for (int i = 0, r = 0; i < T; i++) {
        if (r < M && rows[r] == i) {
            r++;
            continue;
        }
        memset(x + (size_t)i * ld, 0, (size_t)n * sizeof(float));
    }
}

/* Scratch slots (util/scratch.h) of the routed passes; slot 0 is the products'. */
enum { SLOT_ROWS = 1, SLOT_Q = 2, SLOT_S = 3, SLOT_Y = 4, SLOT_DQ = 5 };

/* The routed forward of one pair: its M < T routed rows (M >= 1) through the compact
 * products; the other rows of y, P and Pd are zeros. */
static void pair_forward_rows(float *y, float *P, float *Pd, const float *q, const float *k,
                              const float *v, const int *rows, int M, int T, int D, int A,
                              int ld, float p, uint64_t key, size_t att_off)
{
    float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    float *Qc = scratch_floats(SLOT_Q, (size_t)M * D), *S = scratch_floats(SLOT_S, (size_t)M * T);
    float *Yc = scratch_floats(SLOT_Y, (size_t)M * D);
    gather_rows(Qc, q, (size_t)ld, rows, M, D);
    rows_softmax(S, Qc, rows, M, k, T, D, ld);
    for (int r = 0; r < M; r++) {
        float *s = S + (size_t)r * T;
        memcpy(P + (size_t)rows[r] * T, s, (size_t)T * sizeof(float));
        if (p > 0.0f) {
            for (int j = 0; j < T; j++) {
                size_t idx = att_off + (size_t)rows[r] * T + j;
                s[j] = dropout_keep(key, idx, p) ? s[j] * keep_scale : 0.0f;
            }
            memcpy(Pd + (size_t)rows[r] * T, s, (size_t)T * sizeof(float));
        }
    }
    zero_other_rows(P, (size_t)T, rows, M, T, T);
    if (p > 0.0f)
        zero_other_rows(Pd, (size_t)T, rows, M, T, T);
    matmul_nn_causal_rows(M, rows, D, S, T, v, ld, Yc, D);
    for (int r = 0; r < M; r++)
        memcpy(y + (size_t)rows[r] * A, Yc + (size_t)r * D, (size_t)D * sizeof(float));
    zero_other_rows(y, (size_t)A, rows, M, T, D);
}

void attention_forward_routed(float *out, float *att, float *attd, const float *qkv,
                              const float *on, int B, int T, int H, int D, float p, uint64_t key)
{
    int A = H * D, ld = 3 * A;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * T * ld + (size_t)h * D;
            size_t att_off = ((size_t)b * H + h) * T * T;
            float *P = att + att_off, *Pd = p > 0.0f ? attd + att_off : P;
            float *y = out + (size_t)b * T * A + (size_t)h * D;
            int *rows = (int *)scratch_floats(SLOT_ROWS, (size_t)T);
            int M = pick_rows(rows, on, b, T, H, h, 1);
            if (M == T) {
                pair_forward(y, P, Pd, q, q + A, q + 2 * A, T, D, A, ld, p, key, att_off);
            } else if (M > 0) {
                pair_forward_rows(y, P, Pd, q, q + A, q + 2 * A, rows, M, T, D, A, ld, p, key,
                                  att_off);
            } else {
                memset(P, 0, (size_t)T * T * sizeof(float));
                if (p > 0.0f)
                    memset(Pd, 0, (size_t)T * T * sizeof(float));
                zero_other_rows(y, (size_t)A, rows, 0, T, D);
            }
        }
}

void attention_fill_unrouted(float *att, const float *qkv, const float *on, int B, int T, int H,
                             int D)
{
    int A = H * D, ld = 3 * A;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * T * ld + (size_t)h * D;
            float *P = att + ((size_t)b * H + h) * T * T;
            int *rows = (int *)scratch_floats(SLOT_ROWS, (size_t)T);
            int M = pick_rows(rows, on, b, T, H, h, 0);
            if (M == 0)
                continue;
            float *Qc = scratch_floats(SLOT_Q, (size_t)M * D);
            float *S = scratch_floats(SLOT_S, (size_t)M * T);
            gather_rows(Qc, q, (size_t)ld, rows, M, D);
            rows_softmax(S, Qc, rows, M, q + A, T, D, ld);
            for (int r = 0; r < M; r++)
                memcpy(P + (size_t)rows[r] * T, S + (size_t)r * T, (size_t)T * sizeof(float));
        }
}

/* One query row i of the softmax's backward, in place: ds (the row's dscores, T wide)
 * becomes dS = P * (ds - <P, ds>) * scale over keys 0..i, zero beyond; with dropout
 * (p > 0) the dropped keys' terms (pdr == 0) are zeroed and the kept ones rescaled
 * first. Shared by the plain and the routed backward, so both make the same chain. */
static void softmax_backward_row(float *ds, const float *pr, const float *pdr, int i, int T,
                                 float p, float keep_scale, float scale)
{
    if (p > 0.0f)
        for (int j = 0; j <= i; j++)
            ds[j] = pdr[j] != 0.0f ? ds[j] * keep_scale : 0.0f;
    float dot = vmath_dot(pr, ds, i + 1);
    for (int j = 0; j <= i; j++)
        ds[j] = pr[j] * (ds[j] - dot) * scale;
    memset(ds + i + 1, 0, (size_t)(T - i - 1) * sizeof(float));
}

/* Backward of y = Pd v, Pd = dropout(P), P = softmax(scale * q k^T) (causal):
 *   dPd = dy v^T;  dv = Pd^T dy;  dP = dPd * keep / (1 - p)
 *   dS  = P * (dP - sum_j P dP) * scale   (softmax backward, row-wise)
 *   dq = dS k;     dk = dS^T q.
 * dS is kept lower triangular (zeros above the diagonal), as the causal products
 * that read it require. */
/* One pair's backward at every query row (the views as in pair_forward; dS its
 * T x T block of datt, dq, dk, dv its views of dqkv, dy of dout). */
static void pair_backward(float *dq, float *dk, float *dv, float *dS, const float *dy,
                          const float *q, const float *k, const float *v, const float *P,
                          const float *Pd, int T, int D, int A, int ld, float p)
{
    float scale = 1.0f / sqrtf((float)D);
    float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    matmul_nt_causal(T, D, dy, A, v, ld, dS, T, 0);
    for (int i = 0; i < T; i++) {
        softmax_backward_row(dS + (size_t)i * T, P + (size_t)i * T, Pd + (size_t)i * T, i, T,
                             p, keep_scale, scale);
    }
    matmul_nn_causal(T, D, dS, T, k, ld, dq, ld, 0);
    matmul_tn_causal(T, D, dS, T, q, ld, dk, ld, 0);
    matmul_tn_causal(T, D, Pd, T, dy, A, dv, ld, 0);
}

void attention_backward(float *dqkv, float *datt, const float *dout, const float *qkv,
                        const float *att, const float *attd, int B, int T, int H, int D, float p)
{
    attention_backward_rounded(dqkv, datt, dout, qkv, att, attd, B, T, H, D, p, NULL);
}

void attention_backward_rounded(float *dqkv, float *datt, const float *dout, const float *qkv,
                                const float *att, const float *attd, int B, int T, int H, int D,
                                float p, Bf16Rows *r)
{
    /* the routed backward with every row routed: the same pairs, in the same order */
    attention_backward_routed_rounded(dqkv, datt, dout, qkv, att, attd, NULL, B, T, H, D, p, r);
}

/* The routed backward of one pair over its M < T routed rows (M >= 1), the same
 * formulas on the gathered rows: dS's first M rows hold the compact dS (M, T); the
 * other rows add nothing (their dy is zero), and their dq rows are zeros. */
static void pair_backward_rows(float *dq, float *dk, float *dv, float *dS, const float *dy,
                               const float *q, const float *k, const float *v, const float *P,
                               const float *Pd, const int *rows, int M, int T, int D, int A,
                               int ld, float p)
{
    float scale = 1.0f / sqrtf((float)D);
    float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    float *Qc = scratch_floats(SLOT_Q, (size_t)M * D), *Pc = scratch_floats(SLOT_S, (size_t)M * T);
    float *dYc = scratch_floats(SLOT_Y, (size_t)M * D), *dQc = scratch_floats(SLOT_DQ, (size_t)M * D);
    gather_rows(Qc, q, (size_t)ld, rows, M, D);
    gather_rows(dYc, dy, (size_t)A, rows, M, D);
    gather_rows(Pc, Pd, (size_t)T, rows, M, T);
    matmul_nt_causal_rows(M, rows, D, dYc, D, v, ld, dS, T);
    for (int r = 0; r < M; r++) {
        int i = rows[r];
        softmax_backward_row(dS + (size_t)r * T, P + (size_t)i * T, Pc + (size_t)r * T, i, T,
                             p, keep_scale, scale);
    }
    matmul_nn_causal_rows(M, rows, D, dS, T, k, ld, dQc, D);
    for (int r = 0; r < M; r++)
        memcpy(dq + (size_t)rows[r] * ld, dQc + (size_t)r * D, (size_t)D * sizeof(float));
    zero_other_rows(dq, (size_t)ld, rows, M, T, D);
    matmul_tn_causal_rows(M, rows, T, D, dS, T, Qc, D, dk, ld);
    matmul_tn_causal_rows(M, rows, T, D, Pc, T, dYc, D, dv, ld);
}

void attention_backward_routed(float *dqkv, float *datt, const float *dout, const float *qkv,
                               const float *att, const float *attd, const float *on, int B, int T,
                               int H, int D, float p)
{
    attention_backward_routed_rounded(dqkv, datt, dout, qkv, att, attd, on, B, T, H, D, p, NULL);
}

void attention_backward_routed_rounded(float *dqkv, float *datt, const float *dout,
                                       const float *qkv, const float *att, const float *attd,
                                       const float *on, int B, int T, int H, int D, float p,
                                       Bf16Rows *r)
{
    int A = H * D, ld = 3 * A;
    r = rows_begin(r, dqkv, B * T, ld);
    int cols = r && bf16_rows_start_cols(r);      /* dqkv's columns too, for qkv's dW */
    #pragma omp parallel
    {
        #pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                size_t qoff = (size_t)b * T * ld + (size_t)h * D;
                const float *q = qkv + qoff;
                float *dq = dqkv + qoff;
                size_t att_off = ((size_t)b * H + h) * T * T;
                const float *P = att + att_off, *Pd = p > 0.0f ? attd + att_off : P;
                const float *dy = dout + (size_t)b * T * A + (size_t)h * D;
                int *rows = on ? (int *)scratch_floats(SLOT_ROWS, (size_t)T) : NULL;
                int M = on ? pick_rows(rows, on, b, T, H, h, 1) : T;
                if (M == T)
                    pair_backward(dq, dq + A, dq + 2 * A, datt + att_off, dy, q, q + A,
                                  q + 2 * A, P, Pd, T, D, A, ld, p);
                else if (M > 0)
                    pair_backward_rows(dq, dq + A, dq + 2 * A, datt + att_off, dy, q, q + A,
                                       q + 2 * A, P, Pd, rows, M, T, D, A, ld, p);
                else
                    for (int x = 0; x < 3; x++)
                        zero_other_rows(dq + (size_t)x * A, (size_t)ld, rows, 0, T, D);
            }
        if (r)
            rows_round(r, cols ? r : NULL, dqkv, B * T, ld);
    }
}
