/* bf16_emul: see bf16_emul.h. Rounding passes that write the operands as floats with
 * each pair swapped and note every row's or column's smallest exponent, the float32
 * layer (kernels/linear.c) on them, then the exceptions one output at a time. */
#include "kernels/bf16_emul.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "kernels/vmath.h"
#include "util/scratch.h"

/* bf16_emul.h's bounds on biased exponents; E_NONE: a row or column of zeros. */
enum { E_SAFE_SUM = 142, E_ACC_MIN = 24, E_NONE = 255 };

/* Exceptions above one in this many outputs: decline (the step-by-step tiles are then
 * faster than recomputing them one by one). */
enum { EXCEPTION_SHARE = 8 };

/* The calling thread's scratch slots (bf16.c uses the same ones, never at once; the
 * float32 kernels use 0 and 1 of every thread). */
enum { SLOT_A = 2, SLOT_B = 3, SLOT_EXP = 4, SLOT_OLD = 5 };

static inline uint32_t key_of(uint32_t r)
{
    return bf16_emul_key(r);
}

static inline unsigned char exp_of_key(uint32_t k)
{
    return bf16_emul_exp(k);
}

static inline float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Whether a conversion of n elements is worth a parallel region of its own. */
static int parallel_rounding(double n)
{
    return n >= 65536.0;
}

unsigned char bf16_emul_round_row(float *dst, const float *row, int K)
{
    int K2 = 2 * bf16_pairs(K);
    uint32_t kmin = UINT32_MAX;
    for (int p = 0; p < K / 2; p++) {
        uint32_t u0, u1;
        memcpy(&u0, row + 2 * p, sizeof u0);
        memcpy(&u1, row + 2 * p + 1, sizeof u1);
        uint32_t r0 = bf16_round_bits(u0), r1 = bf16_round_bits(u1);
        dst[2 * p] = float_of(r1 << 16);
        dst[2 * p + 1] = float_of(r0 << 16);
        uint32_t k0 = key_of(r0), k1 = key_of(r1);
        kmin = k0 < kmin ? k0 : kmin;
        kmin = k1 < kmin ? k1 : kmin;
    }
    if (K % 2) {
        uint32_t u0;
        memcpy(&u0, row + K - 1, sizeof u0);
        uint32_t r0 = bf16_round_bits(u0), k0 = key_of(r0);
        dst[K2 - 2] = 0.0f;
        dst[K2 - 1] = float_of(r0 << 16);
        kmin = k0 < kmin ? k0 : kmin;
    }
    return exp_of_key(kmin);
}

/* bf16_emul_round_row for R rows of K (xf's rows 2 bf16_pairs(K) long), the exponents
 * into e[R]. */
static void round_rows_swapped(float *xf, unsigned char *e, const float *x, int R, int K)
{
    int K2 = 2 * bf16_pairs(K);
    #pragma omp parallel for schedule(static) if (parallel_rounding((double)R * K))
    for (int r = 0; r < R; r++)
        e[r] = bf16_emul_round_row(xf + (size_t)r * K2, x + (size_t)r * K, K);
}

/* The same along the columns of x[R][Cc]: xf[2p][c] = bf16(x[2p + 1][c]) (a row of +0
 * past R), xf[2p + 1][c] = bf16(x[2p][c]), into 2 bf16_pairs(R) rows of Cc; e[c]: the
 * column's smallest biased exponent. Threads take blocks of columns. */
static void round_cols_swapped(float *xf, unsigned char *e, const float *x, int R, int Cc)
{
    enum { CB = 64 };
    int P = bf16_pairs(R), ncb = (Cc + CB - 1) / CB;
    #pragma omp parallel for schedule(static) if (parallel_rounding((double)R * Cc))
    for (int cb = 0; cb < ncb; cb++) {
        int c0 = cb * CB, nc = Cc - c0 < CB ? Cc - c0 : CB;
        uint32_t kmin[CB];
        for (int c = 0; c < nc; c++)
            kmin[c] = UINT32_MAX;
        for (int p = 0; p < P; p++) {
            const float *x0 = x + (size_t)2 * p * Cc + c0;
            float *d0 = xf + (size_t)2 * p * Cc + c0, *d1 = d0 + Cc;
            if (2 * p + 1 < R) {
                const float *x1 = x0 + Cc;
                for (int c = 0; c < nc; c++) {
                    uint32_t u0, u1;
                    memcpy(&u0, x0 + c, sizeof u0);
                    memcpy(&u1, x1 + c, sizeof u1);
                    uint32_t r0 = bf16_round_bits(u0), r1 = bf16_round_bits(u1);
                    d0[c] = float_of(r1 << 16);
                    d1[c] = float_of(r0 << 16);
                    uint32_t k0 = key_of(r0), k1 = key_of(r1);
                    uint32_t k = k0 < k1 ? k0 : k1;
                    kmin[c] = k < kmin[c] ? k : kmin[c];
                }
            } else {
                for (int c = 0; c < nc; c++) {
                    uint32_t u0;
                    memcpy(&u0, x0 + c, sizeof u0);
                    uint32_t r0 = bf16_round_bits(u0), k0 = key_of(r0);
                    d0[c] = 0.0f;
                    d1[c] = float_of(r0 << 16);
                    kmin[c] = k0 < kmin[c] ? k0 : kmin[c];
                }
            }
        }
        for (int c = 0; c < nc; c++)
            e[c0 + c] = exp_of_key(kmin[c]);
    }
}

/* Whether an old accumulator value keeps the chain on multiples of 2^-126. */
static inline int acc_safe(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7fffffffu) == 0 || ((u >> 23) & 0xffu) >= E_ACC_MIN;
}

/* A product C[M][N] whose output (i, j) has operands of smallest exponents ei[i] and
 * ej[j]; old: C's old values (the chains start from them) or NULL. */
typedef struct {
    int M, N;
    const unsigned char *ei, *ej;
    const float *old;
    size_t ldo;
} Exceptions;

static int is_exception(const Exceptions *x, int i, int j)
{
    return x->ei[i] + x->ej[j] < E_SAFE_SUM ||
           (x->old && !acc_safe(x->old[(size_t)i * x->ldo + j]));
}

/* Whether row i has no exception, given ej's smallest value. */
static int row_clear(const Exceptions *x, int i, int ejmin)
{
    return x->ei[i] + ejmin >= E_SAFE_SUM && !x->old;
}

static int min_of(const unsigned char *e, int n)
{
    int m = E_NONE;
    for (int i = 0; i < n; i++)
        m = e[i] < m ? e[i] : m;
    return m;
}

/* The number of exceptions (bf16_emul.h). */
static size_t count_exceptions(const Exceptions *x)
{
    int ejmin = min_of(x->ej, x->N);
    size_t n = 0;
    for (int i = 0; i < x->M; i++)
        if (!row_clear(x, i, ejmin))
            for (int j = 0; j < x->N; j++)
                n += (size_t)is_exception(x, i, j);
    return n;
}

/* One output's chain with bf16_fma's steps: a[k * as] b[k * bs] over k < K2 (rounded,
 * pairs already swapped), from acc. */
static float chain_steps(float acc, const float *a, size_t as, const float *b, size_t bs, int K2)
{
    for (int k = 0; k < K2; k++) {
        uint32_t ua, ub;
        memcpy(&ua, a + (size_t)k * as, sizeof ua);
        memcpy(&ub, b + (size_t)k * bs, sizeof ub);
        acc = bf16_fma(acc, (Bf16)(ua >> 16), (Bf16)(ub >> 16));
    }
    return acc;
}

/* What the float32 kernels add after a chain (bf16.h's Bf16Epilogue), for one output:
 * x + bias[j], then gelu with gelu' into dgelu, or x * scale. */
typedef struct {
    const float *bias, *scale;
    float *dgelu;
} Finish;

static float finish(const Finish *f, float x, size_t at, int j)
{
    if (f->bias)
        x = x + f->bias[j];
    if (f->scale)
        x = x * f->scale[at];
    if (f->dgelu) {
        v8f v = v8_set1(x), s = v8_gelu_gate(v);
        f->dgelu[at] = v8_gelu_grad_gated(v, s)[0];
        x = (v * s)[0];
    }
    return x;
}

/* Recomputes the exceptions of C (ldc floats a row): output (i, j) = finish(chain over
 * k < K2 of a[i * ai + k * ak] b[j * bj + k * bk], from old or +0). */
static void fix_exceptions(float *C, size_t ldc, const Exceptions *x, const float *a, size_t ai,
                           size_t ak, const float *b, size_t bj, size_t bk, int K2,
                           const Finish *f)
{
    int ejmin = min_of(x->ej, x->N);
    #pragma omp parallel for schedule(dynamic, 8) if (x->M > 64)
    for (int i = 0; i < x->M; i++) {
        if (row_clear(x, i, ejmin))
            continue;
        for (int j = 0; j < x->N; j++) {
            if (!is_exception(x, i, j))
                continue;
            size_t at = (size_t)i * ldc + j;
            float acc = x->old ? x->old[(size_t)i * x->ldo + j] : 0.0f;
            float s = chain_steps(acc, a + (size_t)i * ai, ak, b + (size_t)j * bj, bk, K2);
            C[at] = finish(f, s, at, j);
        }
    }
}

/* out[M][*]'s rows (ldo floats apart) rounded into r, once the product and its
 * exceptions are final, and where r holds out's columns (ldo its k) each block of
 * BF16_COL_ROWS rows' columns after its rows. A pass of its own: rounding each float32
 * tile as it finished (a band of rows per thread, its rows' exponents gathered over the
 * column blocks) was built and measured on the AMD EPYC Zen 3, and cost 2-3x this pass
 * at NANO's shapes (docs/matmul.md, "The GELU's output and dfch"). */
static void rows_put_all(Bf16Rows *r, const float *out, int M, size_t ldo)
{
    assert(!r->has_cols || ldo == (size_t)r->k);
    int nrb = (M + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
    #pragma omp parallel for schedule(static) if (parallel_rounding((double)M * ldo))
    for (int rb = 0; rb < nrb; rb++) {
        int i0 = rb * BF16_COL_ROWS, i1 = M - i0 < BF16_COL_ROWS ? M : i0 + BF16_COL_ROWS;
        for (int i = i0; i < i1; i++)
            bf16_rows_put(r, i, out + (size_t)i * ldo);
        if (r->has_cols)
            bf16_rows_put_cols(r, i0, i1 - i0, out + (size_t)i0 * ldo);
    }
}

static float *slot(int s, size_t n)
{
    return scratch_floats(s, n ? n : 1);
}

/* x[R][K]'s rows rounded as round_rows_swapped rounds them, with their exponents in
 * *e: those its producer wrote (r, a Bf16Rows of floats holding x), else rounded here
 * into SLOT_A and ex. */
static const float *rows_swapped(const Bf16Rows *r, const float *x, int R, int K,
                                 unsigned char *ex, const unsigned char **e)
{
    if (r) {
        *e = r->row_exp;
        return (const float *)r->rows;
    }
    float *xf = slot(SLOT_A, (size_t)R * 2 * bf16_pairs(K));
    round_rows_swapped(xf, ex, x, R, K);
    *e = ex;
    return xf;
}

/* Whether the exceptions are few enough for this path. */
static int few(size_t exceptions, int M, int N)
{
    return exceptions * EXCEPTION_SHARE <= (size_t)M * N;
}

int bf16_emulation_fast(void)
{
    return MATMUL_FMA;
}

/* wc, when it holds the emulation's float copies. */
static const Bf16Weight *floats_of(const Bf16Weight *wc)
{
    return wc && wc->kind == BF16_COPY_FLOATS ? wc : NULL;
}

int bf16_emul_forward(float *out, float *dgelu, Bf16Rows *rout, const float *in,
                      const Bf16Rows *rin, const float *W, const Bf16Weight *wc,
                      const float *bias, int N, int IC, int OC)
{
    if (!MATMUL_FMA || N <= 0 || IC <= 0 || OC <= 0)
        return 0;
    int K2 = 2 * bf16_pairs(IC);
    wc = floats_of(wc);
    assert(!rin || (rin->kind == BF16_COPY_FLOATS && rin->n == N && rin->k == IC));
    unsigned char *ex = (unsigned char *)slot(SLOT_EXP, ((size_t)N + OC) / 4 + 1);
    const float *xf, *wf;
    const unsigned char *en, *ew;
    xf = rows_swapped(rin, in, N, IC, ex, &en);
    if (wc) {                             /* W's rows, rounded by the last update */
        wf = (const float *)wc->fwd;
        ew = wc->row_exp;
    } else {
        float *w = slot(SLOT_B, (size_t)OC * K2);
        round_rows_swapped(w, ex + N, W, OC, IC);
        wf = w, ew = ex + N;
    }
    Exceptions x = { N, OC, en, ew, NULL, 0 };
    size_t n = count_exceptions(&x);
    if (!few(n, N, OC))
        return 0;
    if (dgelu)
        matmul_forward_gelu(out, dgelu, xf, wf, bias, N, K2, OC);
    else
        matmul_forward(out, xf, wf, bias, N, K2, OC);
    if (n) {
        Finish f = { bias, NULL, dgelu };
        fix_exceptions(out, (size_t)OC, &x, xf, (size_t)K2, 1, wf, (size_t)K2, 1, K2, &f);
    }
    if (rout)
        rows_put_all(rout, out, N, (size_t)OC);
    return 1;
}

/* din[N][IC] = chain over o of dout[n][o] W[o][ic] (times dgelu): dout's rows and W's
 * columns rounded in pairs of o; the float32 layer's din with OC = 2 bf16_pairs(OC). */
static int emul_din(float *din, Bf16Rows *rdin, const float *dout, const Bf16Rows *rdout,
                    const float *W, const Bf16Weight *wc, const float *dgelu, int N, int IC,
                    int OC)
{
    int K2 = 2 * bf16_pairs(OC);
    unsigned char *ex = (unsigned char *)slot(SLOT_EXP, ((size_t)N + IC) / 4 + 1);
    unsigned char *ei = ex + N;
    const float *df, *wf;
    const unsigned char *en;
    assert(!rdout || (rdout->kind == BF16_COPY_FLOATS && rdout->n == N && rdout->k == OC));
    df = rows_swapped(rdout, dout, N, OC, ex, &en);
    if (wc) {       /* W's columns, rounded by the last update: each column's minimum */
        wf = (const float *)wc->bwd;
        for (int i = 0; i < IC; i++) {
            uint32_t k = UINT32_MAX;
            for (int part = 0; part < BF16_WEIGHT_PARTS; part++) {
                uint32_t kp = wc->col_key[(size_t)part * IC + i];
                k = kp < k ? kp : k;
            }
            ei[i] = exp_of_key(k);
        }
    } else {
        float *w = slot(SLOT_B, (size_t)K2 * IC);
        round_cols_swapped(w, ei, W, OC, IC);
        wf = w;
    }
    Exceptions x = { N, IC, en, ei, NULL, 0 };
    size_t n = count_exceptions(&x);
    if (!few(n, N, IC))
        return 0;
    if (dgelu)
        matmul_backward_gelu(din, NULL, NULL, df, NULL, wf, dgelu, N, IC, K2);
    else
        matmul_backward(din, NULL, NULL, df, NULL, wf, N, IC, K2);
    if (n) {
        Finish f = { NULL, dgelu, NULL };
        fix_exceptions(din, (size_t)IC, &x, df, (size_t)K2, 1, wf, 1, (size_t)IC, K2, &f);
    }
    if (rdin)
        rows_put_all(rdin, din, N, (size_t)IC);
    return 1;
}

/* dW[OC][IC] += chain over n of dout[n][o] in[n][ic]: dout's and in's columns rounded
 * in pairs of n (dout's read from rdout, in's from rin, where their producers wrote
 * them); the float32 layer's dW with N = 2 bf16_pairs(N), from dW's old values (kept
 * aside first where an exception needs them). */
static int emul_dw(float *dW, const float *dout, const Bf16Rows *rdout, const float *in,
                   const Bf16Rows *rin, int N, int IC, int OC)
{
    int K2 = 2 * bf16_pairs(N);
    const Bf16Rows *cols = bf16_cols_of(rdout, dout, N, OC, BF16_COPY_FLOATS);
    const Bf16Rows *icols = bf16_in_cols_of(rin, in, N, IC, BF16_COPY_FLOATS);
    unsigned char *eo = (unsigned char *)slot(SLOT_EXP, ((size_t)OC + IC) / 4 + 1);
    unsigned char *ei = eo + OC;
    const float *dt;
    if (cols) {         /* dout's columns, rounded by its producer: the blocks' minima */
        dt = (const float *)cols->cols;
        bf16_rows_col_exps(cols, eo);
    } else {
        float *d = slot(SLOT_A, (size_t)K2 * OC);
        round_cols_swapped(d, eo, dout, N, OC);
        dt = d;
    }
    const float *xt;
    if (icols) {        /* in's columns, rounded by its producer in the forward */
        xt = (const float *)icols->cols;
        bf16_rows_col_exps(icols, ei);
    } else {
        float *t = slot(SLOT_B, (size_t)K2 * IC);
        round_cols_swapped(t, ei, in, N, IC);
        xt = t;
    }
    Exceptions x = { OC, IC, eo, ei, dW, (size_t)IC };
    size_t n = count_exceptions(&x);
    if (!few(n, OC, IC))
        return 0;
    if (n) {
        float *old = slot(SLOT_OLD, (size_t)OC * IC);
        memcpy(old, dW, (size_t)OC * IC * sizeof(float));
        x.old = old;
    }
    matmul_backward(NULL, dW, NULL, dt, xt, NULL, K2, IC, OC);
    if (n) {
        Finish f = { NULL, NULL, NULL };
        fix_exceptions(dW, (size_t)IC, &x, dt, 1, (size_t)OC, xt, 1, (size_t)IC, K2, &f);
    }
    return 1;
}

int bf16_emul_backward(float *din, Bf16Rows *rdin, float *dW, const float *dout,
                       const Bf16Rows *rdout, const float *in, const Bf16Rows *rin,
                       const float *W, const Bf16Weight *wc, const float *dgelu, int N, int IC,
                       int OC)
{
    if (!MATMUL_FMA || N <= 0 || IC <= 0 || OC <= 0)
        return 0;
    int done = 0;
    if (din && emul_din(din, rdin, dout, rdout, W, floats_of(wc), dgelu, N, IC, OC))
        done |= BF16_EMUL_DIN;
    if (dW && emul_dw(dW, dout, rdout, in, rin, N, IC, OC))
        done |= BF16_EMUL_DW;
    return done;
}

typedef unsigned short v16u __attribute__((vector_size(32)));

/* One row against panel wp (P pairs of BF16_PANEL columns, bf16.h): out[j] = chain of
 * ar (the row's P pairs) with column j, for j < n, then + bias[j]. The chains run as
 * fused multiply-adds, 8 columns a vector, while the panel's smallest exponent is
 * taken (per 16-bit half, keys as key_of); if that and the row's, ea, fail the test,
 * the panel is recomputed with bf16_fma's steps. */
static void row_panel(float *out, const uint32_t *ar, int ea, const uint32_t *wp, int P, int n,
                      const float *bias)
{
    v8f acc[BF16_PANEL / 8] = { 0 };
    v16u kmin = ~(v16u){ 0 };
    const v8i hi = (v8i){ 0 } + (int)0xffff0000u;
    for (int p = 0; p < P; p++) {
        uint32_t a = ar[p];
        v8f ah = v8_set1(float_of(a & 0xffff0000u)), al = v8_set1(float_of(a << 16));
        for (int v = 0; v < BF16_PANEL / 8; v++) {
            v8i w;
            memcpy(&w, wp + (size_t)BF16_PANEL * p + 8 * v, sizeof w);
            acc[v] = v8_fma(ah, (v8f)(w & hi), acc[v]);    /* the odd element first */
            acc[v] = v8_fma(al, (v8f)(w << 16), acc[v]);
            v16u k = ((v16u)w & 0x7fff) - 1, less = (v16u)(k < kmin);
            kmin = (k & less) | (kmin & ~less);
        }
    }
    uint32_t km = UINT32_MAX;
    for (int t = 0; t < 16; t++)
        km = kmin[t] != 0xffff && kmin[t] < km ? kmin[t] : km;
    float s[BF16_PANEL];
    memcpy(s, acc, sizeof s);
    if (ea + exp_of_key(km) < E_SAFE_SUM)
        for (int j = 0; j < n; j++) {
            float x = 0.0f;
            for (int p = 0; p < P; p++) {
                uint32_t w = wp[(size_t)BF16_PANEL * p + j];
                x = bf16_fma(x, (Bf16)(ar[p] >> 16), (Bf16)(w >> 16));
                x = bf16_fma(x, (Bf16)ar[p], (Bf16)w);
            }
            s[j] = x;
        }
    for (int j = 0; j < n; j++)
        out[j] = bias ? s[j] + bias[j] : s[j];
}

int bf16_emul_forward_packed(float *out, const float *in, const uint32_t *wp, const float *bias,
                             int N, int IC, int OC)
{
    if (!MATMUL_FMA || N <= 0 || IC <= 0 || OC <= 0)
        return 0;
    int P = bf16_pairs(IC), nq = (OC + BF16_PANEL - 1) / BF16_PANEL;
    uint32_t *ar = (uint32_t *)slot(SLOT_A, (size_t)P);
    for (int i = 0; i < N; i++) {
        const float *row = in + (size_t)i * IC;
        uint32_t kmin = UINT32_MAX;
        for (int p = 0; p < P; p++) {
            uint32_t u0, u1 = 0;
            memcpy(&u0, row + 2 * p, sizeof u0);
            if (2 * p + 1 < IC)
                memcpy(&u1, row + 2 * p + 1, sizeof u1);
            uint32_t r0 = bf16_round_bits(u0), r1 = bf16_round_bits(u1);
            ar[p] = r0 | r1 << 16;
            uint32_t k0 = key_of(r0), k1 = key_of(r1);
            kmin = k0 < kmin ? k0 : kmin;
            kmin = k1 < kmin ? k1 : kmin;
        }
        int ea = exp_of_key(kmin);
        float *o = out + (size_t)i * OC;
        #pragma omp parallel for schedule(static) if (2.0 * IC * OC >= 1 << 20)
        for (int q = 0; q < nq; q++) {
            int j0 = q * BF16_PANEL, n = OC - j0 < BF16_PANEL ? OC - j0 : BF16_PANEL;
            row_panel(o + j0, ar, ea, wp + (size_t)q * P * BF16_PANEL, P, n,
                      bias ? bias + j0 : NULL);
        }
    }
    return 1;
}
