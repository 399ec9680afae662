/* Sampling tests: the cached decoder against the full forward (logits at every
 * position, greedy text past the block size with the sliding window), the
 * filters and the draw on fixed distributions. ./infer's sampling end to end is
 * in test_sample_cli.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/ckpt.h"
#include "model/gpt.h"
#include "analysis/sample.h"
#include "tests/testutil.h"

/* In-process tests run on one thread: every result here is the same for any
 * thread count (cli_same_seed_same_bytes_across_runs_and_threads checks 1 vs
 * 2), and these tiny models would spend their time in OpenMP barriers, which
 * crawl when the machine is busy. */
static void one_thread(void)
{
    omp_set_num_threads(1);
}

TestSuite(sample, .init = one_thread);

/* A model whose distributions are far from uniform (tu_spread_params). */
static void make_model(Model *m, Config cfg, uint64_t seed)
{
    char err[256];
    cr_assert_eq(model_init(m, &cfg, err, sizeof err), 0, "%s", err);
    tu_spread_params(&m->table, m->params, seed);
}

static void random_ids(int *ids, int n, int V, uint64_t seed)
{
    Rng rng;
    rng_init(&rng, seed, 1);
    for (int i = 0; i < n; i++)
        ids[i] = (int)rng_below(&rng, (uint64_t)V);
}

/* ---- the cached decoder against the full forward ---- */

/* Feeds T tokens one at a time and compares each position's logits with row t
 * of one full forward over all T. Tolerance: the cached step runs the same
 * kernels with one row, and matmul.h promises the same bits for a row whatever
 * the number of rows, so today the difference is 0; 1e-5 of the row's largest
 * logit leaves room for kernels that sum in a different order for N = 1 than
 * for N = T (a few float ulps of O(1) values accumulated over a few layers). */
static double check_cached_logits_in(Config cfg, const unsigned char *head_on, Precision p)
{
    char err[256];
    Model m;
    make_model(&m, cfg, 7 + (uint64_t)cfg.H);
    m.precision = p;
    Activations a;
    cr_assert_eq(acts_init(&a, &cfg, 1, cfg.T, 0, err, sizeof err), 0, "%s", err);
    int *ids = malloc((size_t)cfg.T * sizeof(int));
    random_ids(ids, cfg.T, cfg.V, 3);
    PassOptions po = {.head_on = head_on};
    gpt_forward(&m, &a, ids, NULL, 1, cfg.T, &po);

    Sampler s;
    cr_assert_eq(sampler_init(&s, &m, head_on, 1, err, sizeof err), 0, "%s", err);
    double worst = 0.0;
    for (int t = 0; t < cfg.T; t++) {
        const float *got = t == 0 ? sampler_start(&s, ids, 1) : sampler_step(&s, ids[t]);
        const float *want = a.logits + (size_t)t * cfg.V;
        float scale = 0.0f;
        for (int v = 0; v < cfg.V; v++)
            scale = fabsf(want[v]) > scale ? fabsf(want[v]) : scale;
        for (int v = 0; v < cfg.V; v++) {
            double d = fabs((double)got[v] - want[v]);
            worst = d > worst ? d : worst;
            cr_assert(d <= 1e-5 * scale, "H=%d position %d logit %d: cached %.9g full %.9g",
                      cfg.H, t, v, got[v], want[v]);
        }
    }
    cr_assert_eq(s.slides, 0);
    cr_log_info("cached vs full logits (H=%d): max |difference| %.3g", cfg.H, worst);
    sampler_free(&s);
    acts_free(&a);
    free(ids);
    model_free(&m);
    return worst;
}

static void check_cached_logits(Config cfg, const unsigned char *head_on)
{
    check_cached_logits_in(cfg, head_on, PRECISION_FP32);
}

Test(sample, cached_logits_equal_full_forward_at_every_position)
{
    /* T = 37: several attention row blocks of 16 and a partial 8-lane tail. */
    check_cached_logits((Config){.V = 23, .T = 37, .L = 2, .H = 4, .C = 32, .D = 8}, NULL);
    check_cached_logits((Config){.V = 11, .T = 20, .L = 1, .H = 1, .C = 16, .D = 16}, NULL);
    /* Attention width H*D = 15 != C. */
    check_cached_logits((Config){.V = 9, .T = 19, .L = 3, .H = 3, .C = 24, .D = 5}, NULL);
}

/* Head gates (model/gates.h): the spread parameters put every log_alpha in
 * +-0.3, so every evaluation gate lies strictly between 0 and 1; the cached step
 * multiplies each head by it as the full forward does. */
Test(sample, cached_logits_equal_full_forward_with_head_gates)
{
    check_cached_logits((Config){.V = 23, .T = 37, .L = 2, .H = 4, .C = 32, .D = 8, .gates = 1},
                        NULL);
}

/* A routed model (model/route.h): the cached step runs the router on the token's
 * ln1 output and weights its heads as the full forward does (top K, a tie to the
 * lower head, the softmax over the chosen), so the logits are the same bits, with
 * K = 1, 2 and H, beside silenced heads and beside gates. */
Test(sample, cached_logits_equal_full_forward_with_head_routing)
{
    unsigned char on[16] = {1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1}; /* L = 2, H = 8 */
    Config cfg = {.V = 23, .T = 37, .L = 2, .H = 8, .C = 32, .D = 4, .route_k = 2};
    cr_assert_eq(check_cached_logits_in(cfg, NULL, PRECISION_FP32), 0.0);
    cr_assert_eq(check_cached_logits_in(cfg, on, PRECISION_FP32), 0.0);
    cfg.route_k = 1;
    cr_assert_eq(check_cached_logits_in(cfg, NULL, PRECISION_FP32), 0.0);
    cfg.route_k = 8;
    cfg.gates = 1;
    cr_assert_eq(check_cached_logits_in(cfg, NULL, PRECISION_FP32), 0.0);
    cr_assert_eq(check_cached_logits_in((Config){.V = 9, .T = 19, .L = 3, .H = 3, .C = 24,
                                                 .D = 5, .route_k = 2},
                                        NULL, PRECISION_BF16), 0.0);
}

Test(sample, cached_logits_equal_full_forward_in_bf16)
{
    check_cached_logits_in((Config){.V = 23, .T = 37, .L = 2, .H = 4, .C = 32, .D = 8}, NULL,
                           PRECISION_BF16);
    check_cached_logits_in((Config){.V = 9, .T = 19, .L = 3, .H = 3, .C = 24, .D = 5}, NULL,
                           PRECISION_BF16);
}

Test(sample, cached_logits_equal_full_forward_with_silenced_heads)
{
    unsigned char on[8] = {1, 0, 1, 1, 0, 1, 0, 1}; /* L = 2, H = 4 */
    check_cached_logits((Config){.V = 23, .T = 29, .L = 2, .H = 4, .C = 32, .D = 8}, on);
}

/* The reference: the window policy written out again, a full forward per token. */
static int reference_greedy(const Model *m, Activations *a, int *window, int *n, int token)
{
    int T = m->cfg.T;
    if (*n == T) {
        int keep = T - T / 2;
        memmove(window, window + (T - keep + 1), (size_t)(keep - 1) * sizeof(int));
        *n = keep - 1;
    }
    window[(*n)++] = token;
    gpt_forward(m, a, window, NULL, 1, *n, NULL);
    return sample_argmax(a->logits + (size_t)(*n - 1) * m->cfg.V, m->cfg.V);
}

/* Greedy decoding for 5T tokens from a prompt of p tokens, with the cache,
 * without it, and by the reference; all three must pick the same tokens. */
static void check_greedy_past_T(Config cfg, int p)
{
    char err[256];
    Model m;
    make_model(&m, cfg, 99);
    Activations a;
    cr_assert_eq(acts_init(&a, &cfg, 1, cfg.T, 0, err, sizeof err), 0, "%s", err);
    int n_gen = 5 * cfg.T;
    int *prompt = malloc((size_t)p * sizeof(int)), *window = malloc((size_t)cfg.T * sizeof(int));
    random_ids(prompt, p, cfg.V, 5);
    SampleSettings greedy = {.temperature = 0.0, .top_p = 1.0};

    int *out[2];
    long slides[2];
    for (int cache = 0; cache < 2; cache++) {
        Sampler s;
        cr_assert_eq(sampler_init(&s, &m, NULL, cache, err, sizeof err), 0, "%s", err);
        out[cache] = malloc((size_t)n_gen * sizeof(int));
        const float *logits = sampler_start(&s, prompt, p);
        for (int i = 0; i < n_gen; i++) {
            out[cache][i] = sample_next(logits, cfg.V, &greedy, NULL, NULL);
            logits = sampler_step(&s, out[cache][i]);
        }
        slides[cache] = s.slides;
        sampler_free(&s);
    }
    int n = p < cfg.T ? p : cfg.T;
    memcpy(window, prompt + (p - n), (size_t)n * sizeof(int));
    gpt_forward(&m, &a, window, NULL, 1, n, NULL);
    int want = sample_argmax(a.logits + (size_t)(n - 1) * cfg.V, cfg.V);
    int distinct = 0;
    for (int i = 0; i < n_gen; i++) {
        cr_assert_eq(out[1][i], want, "T=%d token %d: cached %d, reference %d", cfg.T, i,
                     out[1][i], want);
        cr_assert_eq(out[0][i], want, "T=%d token %d: no-cache %d, reference %d", cfg.T, i,
                     out[0][i], want);
        distinct += i > 0 && out[1][i] != out[1][i - 1];
        want = reference_greedy(&m, &a, window, &n, out[1][i]);
    }
    cr_assert_gt(slides[1], 1, "the window never slid");
    cr_assert_eq(slides[0], slides[1]);
    /* With T = 1 greedy text is a map token -> token that soon reaches a fixed
     * point; a longer window must give text that moves. */
    if (cfg.T > 1)
        cr_assert_gt(distinct, 0, "T=%d: greedy text is one repeated token: the test would "
                     "prove little", cfg.T);
    for (int c = 0; c < 2; c++)
        free(out[c]);
    free(prompt);
    free(window);
    acts_free(&a);
    model_free(&m);
}

Test(sample, greedy_cached_equals_full_forward_reference_past_block_size)
{
    check_greedy_past_T((Config){.V = 17, .T = 16, .L = 2, .H = 2, .C = 32, .D = 16}, 5);
    /* Odd T (the window keeps ceil(T/2)) and a prompt longer than T. */
    check_greedy_past_T((Config){.V = 17, .T = 9, .L = 2, .H = 4, .C = 16, .D = 4}, 30);
    /* T = 1: every new token slides the window. */
    check_greedy_past_T((Config){.V = 13, .T = 1, .L = 1, .H = 2, .C = 16, .D = 8}, 3);
}

Test(sample, start_keeps_the_last_T_tokens)
{
    char err[256];
    Config cfg = {.V = 10, .T = 8, .L = 1, .H = 2, .C = 16, .D = 8};
    Model m;
    make_model(&m, cfg, 4);
    int ids[20];
    random_ids(ids, 20, cfg.V, 8);
    Sampler s1, s2;
    cr_assert_eq(sampler_init(&s1, &m, NULL, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sampler_init(&s2, &m, NULL, 1, err, sizeof err), 0, "%s", err);
    const float *a = sampler_start(&s1, ids, 20), *b = sampler_start(&s2, ids + 12, 8);
    cr_assert_eq(memcmp(a, b, (size_t)cfg.V * sizeof(float)), 0);
    cr_assert_eq(s1.n, 8);
    sampler_free(&s1);
    sampler_free(&s2);
    model_free(&m);
}

/* ---- logits -> token ---- */

Test(sample, argmax_ties_go_to_the_lowest_id)
{
    float z[6] = {1.0f, 3.0f, -2.0f, 3.0f, 2.9f, 3.0f};
    cr_assert_eq(sample_argmax(z, 6), 1);
    float flat[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    cr_assert_eq(sample_argmax(flat, 4), 0);
}

/* Fixed distributions (unnormalised where noted) and the exact sets to keep. */
Test(sample, filter_keeps_exactly_the_top_k_then_the_nucleus)
{
    const float p[6] = {0.10f, 0.30f, 0.05f, 0.25f, 0.20f, 0.10f};
    struct { int k; double top_p; unsigned char keep[6]; } cases[] = {
        {0, 1.0, {1, 1, 1, 1, 1, 1}},
        {6, 1.0, {1, 1, 1, 1, 1, 1}},
        {1, 1.0, {0, 1, 0, 0, 0, 0}},
        {3, 1.0, {0, 1, 0, 1, 1, 0}},
        /* ranks: 1 (.30), 3 (.25), 4 (.20), 0 (.10, lower id first), 5 (.10), 2 */
        {4, 1.0, {1, 1, 0, 1, 1, 0}},
        {0, 0.30, {0, 1, 0, 0, 0, 0}},   /* .30 reaches .30 */
        {0, 0.5, {0, 1, 0, 1, 0, 0}},    /* .30 + .25 */
        {0, 0.56, {0, 1, 0, 1, 1, 0}},   /* .55 < .56 */
        {0, 0.999, {1, 1, 1, 1, 1, 1}},
        {0, 1e-6, {0, 1, 0, 0, 0, 0}},   /* the most likely always survives */
        /* top-k 3 leaves .75; top-p on the renormalised rest: .30/.75 = .4, .55/.75 = .73 */
        {3, 0.7, {0, 1, 0, 1, 0, 0}},
        {3, 0.74, {0, 1, 0, 1, 1, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float q[6];
        memcpy(q, p, sizeof q);
        int kept = sample_filter(q, 6, cases[c].k, cases[c].top_p), count = 0;
        for (int v = 0; v < 6; v++) {
            cr_assert_eq(q[v] != 0.0f, cases[c].keep[v], "case %zu (k %d, p %g): token %d", c,
                         cases[c].k, cases[c].top_p, v);
            if (q[v] != 0.0f)
                cr_assert_eq(q[v], p[v], "survivors keep their probability");
            count += cases[c].keep[v];
        }
        cr_assert_eq(kept, count, "case %zu", c);
    }
    /* Ties at the top-k boundary: the lower ids win. */
    float flat[5] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
    cr_assert_eq(sample_filter(flat, 5, 2, 1.0), 2);
    cr_assert(flat[0] > 0 && flat[1] > 0 && flat[2] == 0 && flat[3] == 0 && flat[4] == 0);
}

/* Chi-square statistic of counts[V] against probabilities want[V] (summing to 1
 * over the tokens it covers) for n draws. */
static double chi_square(const long *counts, const double *want, int V, long n)
{
    double x2 = 0.0;
    for (int v = 0; v < V; v++)
        if (want[v] > 0.0) {
            double e = want[v] * (double)n;
            x2 += ((double)counts[v] - e) * ((double)counts[v] - e) / e;
        }
    return x2;
}

/* Draws through sample_next from logits = log(p): a token outside the filtered
 * set fails at once; the frequencies must match p renormalised over the set.
 * With 200,000 draws and a fixed seed the statistic is one fixed number; the
 * threshold is the 99.9% quantile of chi-square with (kept - 1) degrees of
 * freedom, so a correct sampler passes for all but ~1 seed in 1000, while a
 * bias of 1% of a probability would push it far past. */
static void check_draws(const double *p, int V, int top_k, double top_p, const int *allowed,
                        int kept, double x2_limit)
{
    float logits[16], scratch[16];
    for (int v = 0; v < V; v++)
        logits[v] = (float)log(p[v]);
    SampleSettings st = {.temperature = 1.0, .top_k = top_k, .top_p = top_p};
    Rng rng;
    rng_init(&rng, 2024, RNG_STREAM_SAMPLE);
    long counts[16] = {0}, n = 200000;
    for (long i = 0; i < n; i++) {
        int tok = sample_next(logits, V, &st, scratch, &rng);
        cr_assert(tok >= 0 && tok < V && allowed[tok], "draw %ld: token %d is filtered out", i,
                  tok);
        counts[tok]++;
    }
    double mass = 0.0, want[16];
    for (int v = 0; v < V; v++)
        mass += allowed[v] ? p[v] : 0.0;
    for (int v = 0; v < V; v++)
        want[v] = allowed[v] ? p[v] / mass : 0.0;
    double x2 = chi_square(counts, want, V, n);
    cr_log_info("k %d p %g: chi-square %.2f with %d degrees of freedom", top_k, top_p, x2,
                kept - 1);
    cr_assert(x2 < x2_limit, "chi-square %.2f >= %.2f", x2, x2_limit);
}

static const double DIST[8] = {0.05, 0.22, 0.01, 0.18, 0.30, 0.04, 0.12, 0.08};

Test(sample, temperature_1_frequencies_match_the_distribution)
{
    int all[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    check_draws(DIST, 8, 0, 1.0, all, 8, 24.32); /* chi2(7) 99.9% */
}

Test(sample, top_k_never_draws_outside_the_k_most_likely)
{
    int top3[8] = {0, 1, 0, 1, 1, 0, 0, 0};      /* .30, .22, .18 */
    check_draws(DIST, 8, 3, 1.0, top3, 3, 13.82); /* chi2(2) 99.9% */
}

Test(sample, top_p_never_draws_outside_the_nucleus)
{
    int nucleus[8] = {0, 1, 0, 1, 1, 0, 1, 0};   /* .30 + .22 + .18 = .70 < .75; + .12 */
    check_draws(DIST, 8, 0, 0.75, nucleus, 4, 16.27); /* chi2(3) 99.9% */
    /* top-k 5 leaves .90; .70 / .90 = .78 >= .75. */
    int both[8] = {0, 1, 0, 1, 1, 0, 0, 0};
    check_draws(DIST, 8, 5, 0.75, both, 3, 13.82);
}

Test(sample, draw_is_the_inverse_cdf_in_token_order)
{
    const float p[4] = {0.25f, 0.0f, 0.5f, 0.25f};
    cr_assert_eq(sample_draw(p, 4, 0.0), 0);
    cr_assert_eq(sample_draw(p, 4, 0.2499), 0);
    cr_assert_eq(sample_draw(p, 4, 0.25), 2, "a zero-probability token is never drawn");
    cr_assert_eq(sample_draw(p, 4, 0.7499), 2);
    cr_assert_eq(sample_draw(p, 4, 0.75), 3);
    cr_assert_eq(sample_draw(p, 4, 0.9999999), 3);
    const float q[3] = {2.0f, 6.0f, 0.0f}; /* unnormalised: 1/4, 3/4 */
    cr_assert_eq(sample_draw(q, 3, 0.2), 0);
    cr_assert_eq(sample_draw(q, 3, 0.3), 1);
    cr_assert_eq(sample_draw(q, 3, 0.9999999), 1);
}

Test(sample, softmax_at_temperature_1_equals_the_forwards_probs)
{
    char err[256];
    Config cfg = {.V = 29, .T = 6, .L = 1, .H = 2, .C = 16, .D = 8};
    Model m;
    make_model(&m, cfg, 12);
    Activations a;
    cr_assert_eq(acts_init(&a, &cfg, 1, cfg.T, 0, err, sizeof err), 0, "%s", err);
    int ids[6];
    random_ids(ids, 6, cfg.V, 1);
    gpt_forward(&m, &a, ids, NULL, 1, 6, NULL);
    float p[29], hot[29];
    sample_softmax(p, a.logits + 5 * cfg.V, cfg.V, 1.0);
    cr_assert_eq(memcmp(p, a.probs + 5 * cfg.V, sizeof p), 0);
    /* A lower temperature sharpens: the most likely token gains. */
    sample_softmax(hot, a.logits + 5 * cfg.V, cfg.V, 0.5);
    int top = sample_argmax(p, cfg.V);
    cr_assert_gt(hot[top], p[top]);
    /* A temperature far below float range still gives a distribution (no NaN):
     * all the mass on the most likely token. */
    sample_softmax(hot, a.logits + 5 * cfg.V, cfg.V, 1e-300);
    for (int v = 0; v < cfg.V; v++)
        cr_assert(v == top ? hot[v] == 1.0f : hot[v] < 1e-30f, "token %d: %g", v, hot[v]);
    acts_free(&a);
    model_free(&m);
}
