/* Tests for the products built on the sgemm kernels: the linear layer's forward
 * and backward (bias after the dot product, din written, weight gradients added,
 * NULL gradients skipped, the same bits on any thread count), nt, nn and tn on
 * the same product, the fused GELU layers, the causal products, the forward on
 * transposed weights and the 16-lane vector maths, against the double reference
 * of tests/matmul_ref.h or the unfused passes. Timing is left to
 * bench/bench_matmul.c. */
#include "model/layers.h"
#include "kernels/matmul.h"
#include "util/rng.h"
#include "kernels/vmath.h"
#include "tests/matmul_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int N, IC, OC;
    float *in, *W, *bias, *dout, *din, *dW, *dbias; /* gradients hold random "old" values */
} Layer;

static Layer layer_make(int N, int IC, int OC, Rng *rng)
{
    Layer l = { N, IC, OC, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    l.in = alloc_uniform((size_t)N * IC, rng);
    l.W = alloc_uniform((size_t)OC * IC, rng);
    l.bias = alloc_uniform((size_t)OC, rng);
    l.dout = alloc_uniform((size_t)N * OC, rng);
    l.din = alloc_uniform((size_t)N * IC, rng);
    l.dW = alloc_uniform((size_t)OC * IC, rng);
    l.dbias = alloc_uniform((size_t)OC, rng);
    return l;
}

static void layer_free(Layer *l)
{
    free(l->in);
    free(l->W);
    free(l->bias);
    free(l->dout);
    free(l->din);
    free(l->dW);
    free(l->dbias);
}

static float *copy_of(const float *p, size_t n)
{
    float *q = malloc(n * sizeof(float));
    cr_assert(q);
    memcpy(q, p, n * sizeof(float));
    return q;
}

static void assert_same_bits(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                  "%s: element %zu is %.9g, expected %.9g", what, i, got[i], want[i]);
}

/* Forward and backward at a given thread count, on copies of the old gradients. */
typedef struct {
    float *out, *out_nobias, *din, *dW, *dbias;
} LayerRun;

static LayerRun layer_run(const Layer *l, int threads)
{
    LayerRun r;
    omp_set_num_threads(threads);
    r.out = malloc((size_t)l->N * l->OC * sizeof(float));
    r.out_nobias = malloc((size_t)l->N * l->OC * sizeof(float));
    cr_assert(r.out && r.out_nobias);
    matmul_forward(r.out, l->in, l->W, l->bias, l->N, l->IC, l->OC);
    matmul_forward(r.out_nobias, l->in, l->W, NULL, l->N, l->IC, l->OC);
    r.din = copy_of(l->din, (size_t)l->N * l->IC);
    r.dW = copy_of(l->dW, (size_t)l->OC * l->IC);
    r.dbias = copy_of(l->dbias, (size_t)l->OC);
    matmul_backward(r.din, r.dW, r.dbias, l->dout, l->in, l->W, l->N, l->IC, l->OC);
    return r;
}

static void layer_run_free(LayerRun *r)
{
    free(r->out);
    free(r->out_nobias);
    free(r->din);
    free(r->dW);
    free(r->dbias);
}

static const int layer_shapes[][3] = {
    /* N, IC, OC: odd sizes, the logits width, and a training-like shape */
    { 67, 40, 65 }, { 13, 5, 7 }, { 1, 1, 1 }, { 256, 128, 384 }, { 96, 512, 128 },
    { 30, 24, 50 }, { 20, 33, 24 }, { 200, 600, 300 },
};

Test(matmul, forward_is_matmul_nt_then_bias_and_matches_reference)
{
    Rng rng;
    rng_init(&rng, 6, 100);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        Layer l = layer_make(N, IC, OC, &rng);
        LayerRun r = layer_run(&l, 2);

        /* out = in . W^T (nt), then + bias after the dot: the bit pattern of
         * out_nobias + bias, and out_nobias is matmul_nt's bits. */
        float *want = malloc((size_t)N * OC * sizeof(float));
        cr_assert(want);
        matmul_nt(N, OC, IC, l.in, IC, l.W, IC, want, OC, 0);
        assert_same_bits(r.out_nobias, want, (size_t)N * OC, "forward without bias vs matmul_nt");
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++)
                want[(size_t)n * OC + o] += l.bias[o];
        assert_same_bits(r.out, want, (size_t)N * OC, "forward: out = dot + bias");
        Prod pf = { NT, N, OC, IC, IC, IC, OC, l.in, l.W, r.out_nobias };
        check_reference(&pf, NULL, r.out_nobias, 0, "forward");
        free(want);

        layer_run_free(&r);
        layer_free(&l);
    }
}

Test(matmul, backward_writes_din_and_adds_into_dw_and_dbias)
{
    Rng rng;
    rng_init(&rng, 9, 100);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        Layer l = layer_make(N, IC, OC, &rng);
        LayerRun r = layer_run(&l, 2);
        /* din = dout . W (nn, the old values overwritten) and dW += dout^T . in (tn, added
         * onto the old values): sgemm's bits, and within the reference tolerance. */
        float *din = copy_of(l.din, (size_t)N * IC), *dW = copy_of(l.dW, (size_t)OC * IC);
        matmul_nn(N, IC, OC, l.dout, OC, l.W, IC, din, IC, 0);
        matmul_tn(OC, IC, N, l.dout, OC, l.in, IC, dW, IC, 1);
        assert_same_bits(r.din, din, (size_t)N * IC, "din vs matmul_nn");
        assert_same_bits(r.dW, dW, (size_t)OC * IC, "dW vs matmul_tn");
        Prod pd = { NN, N, IC, OC, OC, IC, IC, l.dout, l.W, r.din };
        check_reference(&pd, l.din, r.din, 0, "backward din");
        Prod pw = { TN, OC, IC, N, OC, IC, IC, l.dout, l.in, r.dW };
        check_reference(&pw, l.dW, r.dW, 1, "backward dW");
        free(din);
        free(dW);

        /* dbias[o] = old + dout[0][o] + dout[1][o] + ... in order of n. */
        for (int o = 0; o < OC; o++) {
            float sum = l.dbias[o];
            for (int n = 0; n < N; n++)
                sum += l.dout[(size_t)n * OC + o];
            cr_assert(memcmp(&sum, &r.dbias[o], sizeof(float)) == 0,
                      "dbias[%d] = %.9g, in-order sum %.9g", o, r.dbias[o], sum);
        }
        layer_run_free(&r);
        layer_free(&l);
    }
}

Test(matmul, layer_gives_the_same_bits_on_1_2_and_3_threads)
{
    Rng rng;
    rng_init(&rng, 7, 100);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        Layer l = layer_make(N, IC, OC, &rng);
        LayerRun one = layer_run(&l, 1);
        for (int threads = 2; threads <= 3; threads++) {
            LayerRun r = layer_run(&l, threads);
            assert_same_bits(r.out, one.out, (size_t)N * OC, "forward out");
            assert_same_bits(r.din, one.din, (size_t)N * IC, "din");
            assert_same_bits(r.dW, one.dW, (size_t)OC * IC, "dW");
            assert_same_bits(r.dbias, one.dbias, (size_t)OC, "dbias");
            layer_run_free(&r);
        }
        layer_run_free(&one);
        layer_free(&l);
    }
}

Test(matmul, backward_skips_null_gradients)
{
    Rng rng;
    rng_init(&rng, 8, 100);
    Layer l = layer_make(29, 24, 65, &rng);
    LayerRun all = layer_run(&l, 2);
    size_t nin = (size_t)l.N * l.IC, nw = (size_t)l.OC * l.IC;
    for (int mask = 0; mask < 8; mask++) {
        float *din = mask & 1 ? copy_of(l.din, nin) : NULL;
        float *dW = mask & 2 ? copy_of(l.dW, nw) : NULL;
        float *dbias = mask & 4 ? copy_of(l.dbias, (size_t)l.OC) : NULL;
        matmul_backward(din, dW, dbias, l.dout, l.in, l.W, l.N, l.IC, l.OC);
        if (din)
            assert_same_bits(din, all.din, nin, "din with others NULL");
        if (dW)
            assert_same_bits(dW, all.dW, nw, "dW with others NULL");
        if (dbias)
            assert_same_bits(dbias, all.dbias, (size_t)l.OC, "dbias with others NULL");
        free(din);
        free(dW);
        free(dbias);
    }
    layer_run_free(&all);
    layer_free(&l);
}

/* The same product through nt, nn and tn (operands copied into each layout) gives
 * the same bits: one chain per element, whatever the kernel. */
Test(matmul, nt_nn_and_tn_give_the_same_bits_for_the_same_product)
{
    static const int shapes[][3] = { { 1, 7, 32 }, { 16, 64, 8 }, { 37, 45, 29 },
                                     { 13, 65, 300 } };
    Rng rng;
    rng_init(&rng, 10, 100);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        Prod p = prod_make(NT, M, N, K, 0, &rng);
        float *at = malloc((size_t)K * M * sizeof(float));
        float *bt = malloc((size_t)K * N * sizeof(float));
        float *c[3];
        cr_assert(at && bt);
        for (int i = 0; i < M; i++)
            for (int k = 0; k < K; k++)
                at[(size_t)k * M + i] = p.A[(size_t)i * K + k];
        for (int j = 0; j < N; j++)
            for (int k = 0; k < K; k++)
                bt[(size_t)k * N + j] = p.B[(size_t)j * K + k];
        for (int kind = NT; kind <= TN; kind++) {
            c[kind] = malloc((size_t)M * N * sizeof(float));
            cr_assert(c[kind]);
            memcpy(c[kind], p.C, (size_t)M * N * sizeof(float));
        }
        matmul_nt(M, N, K, p.A, K, p.B, K, c[NT], N, 1);
        matmul_nn(M, N, K, p.A, K, bt, N, c[NN], N, 1);
        matmul_tn(M, N, K, at, M, bt, N, c[TN], N, 1);
        assert_same_bits(c[NN], c[NT], (size_t)M * N, "nn vs nt");
        assert_same_bits(c[TN], c[NT], (size_t)M * N, "tn vs nt");
        for (int kind = NT; kind <= TN; kind++)
            free(c[kind]);
        free(at);
        free(bt);
        prod_free(&p);
    }
}

/* gelu'(x) as gelu_backward computes it: 0 + 1 * gelu'(x). */
static float *gelu_grad_of(const float *x, size_t n)
{
    float *ones = malloc(n * sizeof(float)), *g = calloc(n, sizeof(float));
    cr_assert(ones && g);
    for (size_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    gelu_backward(g, ones, x, n);
    free(ones);
    return g;
}

/* Equal as numbers, neither a NaN: the separate GELU pass adds onto a zeroed buffer,
 * so it may turn a -0 into +0 where the fused one keeps the sign. */
static void assert_same_values(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] && !(got[i] != got[i]), "%s[%zu] = %.9g, separate passes %.9g",
                  what, i, got[i], want[i]);
}

/* The fused GELU layers equal the separate passes: the forward's gelu(pre) bit for bit
 * and its gelu'(pre) equal to what gelu_backward uses; the backward's din equal to
 * (dout . W) then gelu_backward, and the same dW and dbias; on 1 and 2 threads. */
Test(matmul, fused_gelu_layers_equal_the_separate_passes)
{
    Rng rng;
    rng_init(&rng, 11, 100);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        Layer l = layer_make(N, IC, OC, &rng);
        size_t no = (size_t)N * OC, ni = (size_t)N * IC;
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            float *act = malloc(no * sizeof(float)), *dgelu = malloc(no * sizeof(float));
            float *want_pre = malloc(no * sizeof(float)), *want_act = calloc(no, sizeof(float));
            cr_assert(act && dgelu && want_pre && want_act);
            matmul_forward_gelu(act, dgelu, l.in, l.W, l.bias, N, IC, OC);
            matmul_forward(want_pre, l.in, l.W, l.bias, N, IC, OC);
            gelu_forward(want_act, want_pre, no);
            float *want_dgelu = gelu_grad_of(want_pre, no);
            assert_same_bits(act, want_act, no, "fused forward: gelu");
            assert_same_values(dgelu, want_dgelu, no, "fused forward: gelu'");

            /* Backward of a layer whose input is gelu(x), x = l.in as the pre-activation. */
            float *din = malloc(ni * sizeof(float)), *dW = copy_of(l.dW, (size_t)OC * IC);
            float *dbias = copy_of(l.dbias, (size_t)OC);
            float *dact = calloc(ni, sizeof(float)), *want_din = calloc(ni, sizeof(float));
            float *want_dW = copy_of(l.dW, (size_t)OC * IC);
            float *want_db = copy_of(l.dbias, (size_t)OC);
            float *gin = malloc(ni * sizeof(float)), *gin_grad = gelu_grad_of(l.in, ni);
            cr_assert(din && dact && want_din && gin);
            gelu_forward(gin, l.in, ni);
            matmul_backward_gelu(din, dW, dbias, l.dout, gin, l.W, gin_grad, N, IC, OC);
            matmul_backward(dact, want_dW, want_db, l.dout, gin, l.W, N, IC, OC);
            gelu_backward(want_din, dact, l.in, ni);
            assert_same_values(din, want_din, ni, "fused backward din");
            assert_same_bits(dW, want_dW, (size_t)OC * IC, "fused backward dW");
            assert_same_bits(dbias, want_db, (size_t)OC, "fused backward dbias");
            free(act); free(dgelu); free(want_pre); free(want_act); free(want_dgelu); free(din);
            free(dW); free(dbias); free(dact); free(want_din); free(want_dW); free(want_db);
            free(gin); free(gin_grad);
        }
        layer_free(&l);
    }
}

/* The causal products against the full ones: nt_causal equals matmul_nt on and
 * below the diagonal; nn_causal and tn_causal, given a lower-triangular A, equal
 * matmul_nn and matmul_tn everywhere (up to the sign of a zero), for T past a k block,
 * a head size past one (D = 300) and odd widths, through both of nt_causal's paths (B
 * packed whole when T x D is small, panel by panel otherwise: the last two shapes);
 * accumulate adds onto the old C. */
Test(matmul, causal_products_equal_the_full_ones_on_the_causal_part)
{
    static const int shapes[][2] = { { 1, 8 },    { 7, 5 },    { 37, 16 }, { 64, 32 },
                                     { 300, 24 }, { 20, 300 }, { 300, 64 }, { 70, 300 } };
    Rng rng;
    rng_init(&rng, 12, 100);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int T = shapes[s][0], D = shapes[s][1];
        size_t tt = (size_t)T * T, td = (size_t)T * D;
        float *A = alloc_uniform(td, &rng), *B = alloc_uniform(td, &rng);
        float *P = alloc_uniform(tt, &rng), *V = alloc_uniform(td, &rng);
        for (int i = 0; i < T; i++) /* P lower triangular */
            for (int j = i + 1; j < T; j++)
                P[(size_t)i * T + j] = 0.0f;
        for (int accumulate = 0; accumulate <= 1; accumulate++) {
            float *old = alloc_uniform(tt, &rng), *full = copy_of(old, tt), *c = copy_of(old, tt);
            matmul_nt(T, T, D, A, D, B, D, full, T, accumulate);
            matmul_nt_causal(T, D, A, D, B, D, c, T, accumulate);
            for (int i = 0; i < T; i++)
                for (int j = 0; j <= i; j++)
                    cr_assert(memcmp(&c[(size_t)i * T + j], &full[(size_t)i * T + j],
                                     sizeof(float)) == 0,
                              "nt_causal T=%d D=%d acc=%d: S[%d][%d] = %.9g, full %.9g", T, D,
                              accumulate, i, j, c[(size_t)i * T + j], full[(size_t)i * T + j]);
            free(old); free(full); free(c);

            float *oldy = alloc_uniform(td, &rng);
            float *fy = copy_of(oldy, td), *cy = copy_of(oldy, td);
            matmul_nn(T, D, T, P, T, V, D, fy, D, accumulate);
            matmul_nn_causal(T, D, P, T, V, D, cy, D, accumulate);
            for (size_t i = 0; i < td; i++)
                cr_assert(cy[i] == fy[i], "nn_causal T=%d D=%d acc=%d: [%zu] %.9g vs %.9g", T, D,
                          accumulate, i, cy[i], fy[i]);
            memcpy(fy, oldy, td * sizeof(float));
            memcpy(cy, oldy, td * sizeof(float));
            matmul_tn(T, D, T, P, T, V, D, fy, D, accumulate);
            matmul_tn_causal(T, D, P, T, V, D, cy, D, accumulate);
            for (size_t i = 0; i < td; i++)
                cr_assert(cy[i] == fy[i], "tn_causal T=%d D=%d acc=%d: [%zu] %.9g vs %.9g", T, D,
                          accumulate, i, cy[i], fy[i]);
            free(oldy); free(fy); free(cy);
        }
        free(A); free(B); free(P); free(V);
    }
}

/* matmul_forward_t on W^T gives matmul_forward's bits, one row and several. */
Test(matmul, forward_on_transposed_weights_equals_the_forward)
{
    Rng rng;
    rng_init(&rng, 13, 100);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        Layer l = layer_make(N, IC, OC, &rng);
        float *Wt = malloc((size_t)IC * OC * sizeof(float));
        float *want = malloc((size_t)N * OC * sizeof(float));
        float *got = malloc((size_t)N * OC * sizeof(float));
        cr_assert(Wt && want && got);
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < IC; i++)
                Wt[(size_t)i * OC + o] = l.W[(size_t)o * IC + i];
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            const float *b = with_bias ? l.bias : NULL;
            matmul_forward(want, l.in, l.W, b, N, IC, OC);
            matmul_forward_t(got, l.in, Wt, b, N, IC, OC);
            assert_same_bits(got, want, (size_t)N * OC, "forward_t vs forward");
            matmul_forward_t(got, l.in + (size_t)(N - 1) * IC, Wt, b, 1, IC, OC);
            assert_same_bits(got, want + (size_t)(N - 1) * OC, (size_t)OC, "one row");
        }
        free(Wt); free(want); free(got);
        layer_free(&l);
    }
}

/* The 16-lane exp and GELU (the AVX-512 epilogues) give the 8-lane functions' bits
 * lane by lane: on a spread of values over the clamp, on the clamp edges, on zeros,
 * infinities and a NaN. (Without AVX-512 the 64-byte vectors only pass between
 * static inline functions, so GCC's ABI note -Wpsabi does not concern them.) */
#pragma GCC diagnostic ignored "-Wpsabi"
Test(matmul, sixteen_lane_vmath_equals_the_eight_lane_functions_bit_for_bit)
{
    enum { NV = 4096 };
    static float x[NV];
    Rng rng;
    rng_init(&rng, 5, 100);
    for (int i = 0; i < NV; i++)
        x[i] = 200.0f * rng_uniform(&rng) - 100.0f;
    const float special[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.0f, -87.0f, 88.5f,
                              -87.5f, 1e-30f, -1e-30f, 3.5f, -3.5f, 9.0f, -9.0f, 0.5f };
    memcpy(x, special, sizeof special);
    for (int i = 0; i < NV; i += 16) {
        v16f x16;
        memcpy(&x16, x + i, sizeof x16);
        v16f e16 = v16_exp(x16), g16 = v16_gelu_gate(x16);
        v16f d16 = v16_gelu_grad_gated(x16, g16);
        for (int h = 0; h < 2; h++) {
            v8f x8 = v8_load(x + i + 8 * h);
            v8f e8 = v8_exp(x8), g8 = v8_gelu_gate(x8), d8 = v8_gelu_grad_gated(x8, g8);
            for (int l = 0; l < 8; l++) {
                int q = 8 * h + l;
                cr_assert(memcmp(&e16[q], &e8[l], sizeof(float)) == 0 &&
                              memcmp(&g16[q], &g8[l], sizeof(float)) == 0 &&
                              memcmp(&d16[q], &d8[l], sizeof(float)) == 0,
                          "x = %.9g: exp %.9g / %.9g, gate %.9g / %.9g, grad %.9g / %.9g "
                          "(16 / 8 lanes)",
                          x[i + q], e16[q], e8[l], g16[q], g8[l], d16[q], d8[l]);
            }
        }
    }
}
