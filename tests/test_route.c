/* Mixture-of-heads routing (model/route.h): the top-K choice and its tie rule,
 * the weights' and the balance loss's known values, central differences for the
 * routing layer (into the router's input, weights and bias, and into the heads'
 * outputs) and for the whole routed model at H = 1, 4, 8, 16 and K = 1, 2, H;
 * a router fixed on K heads against the head mask, bit for bit; thread counts
 * giving the same bits; the parameter table of a routed model; a routed model
 * overfitting one batch. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "model/route.h"
#include "trainer/trainer.h"
#include "tests/testutil.h"

/* ---- the routing layer alone ---- */

/* Objective sum(out . R) + balance * (balance loss), in double, with
 * out = route(in) and the router reading x. The choice must not move while a
 * difference is taken (it is piecewise constant: a move would be a jump, not a
 * derivative), so the objective asserts that it matches the choice at the
 * unperturbed point. */
typedef struct {
    int N, C, H, D, K;
    float balance;
    float *x, *W, *b, *in, *R;
    float *prob, *on, *weight, *out, *on0;
} LayerCtx;

static double layer_obj(void *ctx)
{
    LayerCtx *c = ctx;
    double loss = route_scores_forward(c->prob, c->on, c->weight, c->x, c->W, c->b, c->N, c->C,
                                       c->H, c->K);
    route_forward(c->out, c->in, c->on, c->weight, c->N, c->H, c->D);
    if (c->on0)
        cr_assert(memcmp(c->on, c->on0, sizeof(float) * c->N * c->H) == 0,
                  "a difference step moved the top-%d choice (H = %d): choose other values", c->K,
                  c->H);
    size_t n = (size_t)c->N * c->H * c->D;
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)c->out[i] * c->R[i];
    return s + (double)c->balance * loss;
}

static void layer_alloc(LayerCtx *c, int N, int C, int H, int D, int K, Rng *rng)
{
    size_t NH = (size_t)N * H, NA = NH * D;
    *c = (LayerCtx){.N = N, .C = C, .H = H, .D = D, .K = K, .balance = 0.7f};
    c->x = tu_alloc_random((size_t)N * C, rng, -1.0f, 1.0f);
    c->W = tu_alloc_random((size_t)H * C, rng, -1.0f, 1.0f);
    c->b = tu_alloc_random((size_t)H, rng, -1.0f, 1.0f);
    c->in = tu_alloc_random(NA, rng, -1.0f, 1.0f);
    c->R = tu_alloc_random(NA, rng, -1.0f, 1.0f);
    c->prob = malloc(NH * sizeof(float));
    c->on = malloc(NH * sizeof(float));
    c->weight = malloc(NH * sizeof(float));
    c->out = malloc(NA * sizeof(float));
}

static void layer_free(LayerCtx *c)
{
    free(c->x); free(c->W); free(c->b); free(c->in); free(c->R);
    free(c->prob); free(c->on); free(c->weight); free(c->out); free(c->on0);
}

/* Tolerance as test_gates.c's layer check: out is one float product per element and
 * the weights are rounded once from double, so the objective's rounding noise is
 * ~1e-7 of its terms; with h = 1e-3 that is ~1e-4 in a numeric value, within atol
 * 1e-3 of the tensor's largest gradient, and rtol 1e-2. */
static void check_layer(int H, int K)
{
    enum { N = 12, C = 6, D = 3 };
    Rng rng;
    rng_init(&rng, 40 + (uint64_t)H, (uint64_t)K);
    LayerCtx c;
    layer_alloc(&c, N, C, H, D, K, &rng);
    size_t NH = (size_t)N * H, NA = NH * D;
    layer_obj(&c);
    c.on0 = malloc(NH * sizeof(float));
    memcpy(c.on0, c.on, NH * sizeof(float));
    float *din = malloc(NA * sizeof(float)), *dscore = malloc(NH * sizeof(float));
    float *dx = calloc((size_t)N * C, sizeof(float)), *dW = calloc((size_t)H * C, sizeof(float));
    float *db = calloc((size_t)H, sizeof(float));
    memcpy(din, c.R, NA * sizeof(float));
    route_backward(din, dscore, c.in, c.prob, c.on, c.weight, N, H, D, K, c.balance);
    route_scores_backward(dx, dW, db, dscore, c.x, c.W, N, C, H);
    int bad = tu_gradcheck("in", c.in, din, NA, layer_obj, &c, 1e-3, 1e-2, 1e-3, 24, &rng);
    bad += tu_gradcheck("x", c.x, dx, (size_t)N * C, layer_obj, &c, 1e-3, 1e-2, 1e-3, 24, &rng);
    bad += tu_gradcheck("router.w", c.W, dW, (size_t)H * C, layer_obj, &c, 1e-3, 1e-2, 1e-3, 24,
                        &rng);
    bad += tu_gradcheck("router.b", c.b, db, (size_t)H, layer_obj, &c, 1e-3, 1e-2, 1e-3, H, &rng);
    cr_assert_eq(bad, 0, "H = %d, K = %d: %d gradients disagree", H, K, bad);
    /* The heads not chosen get no gradient; with K < H there are some. */
    for (size_t i = 0; i < NA; i++)
        if (c.on[i / D] == 0.0f)
            cr_assert_eq(din[i], 0.0f);
    layer_free(&c);
    free(din); free(dscore); free(dx); free(dW); free(db);
}

Test(route, layer_gradient_matches_finite_differences_1_head) { check_layer(1, 1); }
Test(route, layer_gradient_matches_finite_differences_4_heads)
{
    check_layer(4, 1);
    check_layer(4, 2);
    check_layer(4, 4);
}
Test(route, layer_gradient_matches_finite_differences_8_heads)
{
    check_layer(8, 1);
    check_layer(8, 2);
    check_layer(8, 8);
}
Test(route, layer_gradient_matches_finite_differences_16_heads)
{
    check_layer(16, 1);
    check_layer(16, 2);
    check_layer(16, 16);
}

/* Equal scores go to the lower head index: with W = 0 every token's scores are the
 * biases. All equal: heads 0..K-1 with weights 1/K. Biases (1, 3, 3, 3, 0, 3):
 * K = 2 takes heads 1 and 2, K = 4 heads 1, 2, 3 and 5, K = 5 adds head 0. */
Test(route, ties_go_to_the_lower_head_index)
{
    enum { N = 3, C = 4, H = 6 };
    float x[N * C], W[H * C] = {0}, prob[N * H], on[N * H], weight[N * H];
    Rng rng;
    rng_init(&rng, 2, 0);
    tu_fill(x, N * C, &rng, -1.0f, 1.0f);
    float flat[H] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    for (int K = 1; K <= H; K++) {
        route_scores_forward(prob, on, weight, x, W, flat, N, C, H, K);
        for (int n = 0; n < N; n++)
            for (int h = 0; h < H; h++) {
                cr_assert_eq(on[n * H + h], h < K ? 1.0f : 0.0f, "K = %d: head %d", K, h);
                cr_assert_eq(weight[n * H + h], h < K ? 1.0f / K : 0.0f);
            }
    }
    float bias[H] = {1.0f, 3.0f, 3.0f, 3.0f, 0.0f, 3.0f};
    static const float want[3][H] = {
        {0, 1, 1, 0, 0, 0}, {0, 1, 1, 1, 0, 1}, {1, 1, 1, 1, 0, 1}};
    static const int ks[3] = {2, 4, 5};
    for (int k = 0; k < 3; k++) {
        route_scores_forward(prob, on, weight, x, W, bias, N, C, H, ks[k]);
        for (int n = 0; n < N; n++)
            for (int h = 0; h < H; h++)
                cr_assert_eq(on[n * H + h], want[k][h], "K = %d: head %d", ks[k], h);
    }
}

/* K = 1: the one weight is exactly 1. K = H: the weights are the softmax over all
 * heads, bit for bit. Between: the chosen weights sum to one, each the softmax
 * renormalised over the chosen scores, computed here in double. */
Test(route, weights_are_the_softmax_over_the_chosen_scores)
{
    enum { N = 20, C = 5, H = 8 };
    Rng rng;
    rng_init(&rng, 9, 0);
    float *x = tu_alloc_random(N * C, &rng, -2.0f, 2.0f), *W = tu_alloc_random(H * C, &rng, -1, 1);
    float *b = tu_alloc_random(H, &rng, -1.0f, 1.0f);
    float prob[N * H], on[N * H], weight[N * H];
    for (int K = 1; K <= H; K++) {
        route_scores_forward(prob, on, weight, x, W, b, N, C, H, K);
        for (int n = 0; n < N; n++) {
            double s[H], z = 0.0, sum = 0.0;
            int chosen = 0;
            for (int h = 0; h < H; h++) {
                s[h] = b[h];
                for (int c = 0; c < C; c++)
                    s[h] += (double)W[h * C + c] * x[n * C + c];
            }
            for (int h = 0; h < H; h++)
                if (on[n * H + h] != 0.0f) {
                    z += exp(s[h]);
                    chosen++;
                    /* no head left out scores above a chosen one */
                    for (int j = 0; j < H; j++)
                        cr_assert(on[n * H + j] != 0.0f || s[j] <= s[h]);
                }
            cr_assert_eq(chosen, K);
            for (int h = 0; h < H; h++) {
                float g = weight[n * H + h];
                sum += g;
                if (on[n * H + h] != 0.0f)
                    cr_assert_float_eq(g, exp(s[h]) / z, 1e-6, "K %d token %d head %d", K, n, h);
                else
                    cr_assert_eq(g, 0.0f);
            }
            cr_assert_float_eq(sum, 1.0, 1e-6);
            if (K == 1)
                for (int h = 0; h < H; h++)
                    cr_assert(weight[n * H + h] == 0.0f || weight[n * H + h] == 1.0f);
        }
        if (K == H)
            cr_assert(memcmp(weight, prob, sizeof weight) == 0);
    }
    free(x); free(W); free(b);
}

/* H = 2, K = 1, biases (ln 3, 0), W = 0: p = (3/4, 1/4) for every token, all choose
 * head 0, so f = (1, 0), P = (3/4, 1/4) and the loss is 2 (1 x 3/4) = 1.5. With
 * every head chosen (K = H) f is uniform and the loss is sum_h P_h = 1. */
Test(route, balance_loss_has_its_known_values)
{
    enum { N = 7, C = 3 };
    float x[N * C], W[2 * C] = {0}, b[2] = {(float)log(3.0), 0.0f};
    float prob[N * 2], on[N * 2], weight[N * 2];
    Rng rng;
    rng_init(&rng, 4, 0);
    tu_fill(x, N * C, &rng, -1.0f, 1.0f);
    cr_assert_float_eq(route_scores_forward(prob, on, weight, x, W, b, N, C, 2, 1), 1.5, 1e-7);
    cr_assert_float_eq(prob[0], 0.75f, 1e-7);
    float W8[8 * C], b8[8];
    tu_fill(W8, 8 * C, &rng, -1.0f, 1.0f);
    tu_fill(b8, 8, &rng, -1.0f, 1.0f);
    float p8[N * 8], on8[N * 8], w8[N * 8];
    cr_assert_float_eq(route_scores_forward(p8, on8, w8, x, W8, b8, N, C, 8, 8), 1.0, 1e-6);
}

/* Large enough to cross the parallel threshold: 256 tokens x 16 heads x 64. */
Test(route, layer_one_and_two_threads_give_identical_bits)
{
    enum { N = 256, C = 64, H = 16, D = 4, K = 3 };
    Rng rng;
    rng_init(&rng, 6, 0);
    LayerCtx c;
    layer_alloc(&c, N, C, H, D, K, &rng);
    size_t NH = (size_t)N * H, NA = NH * D;
    float *got[2][5];
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k + 1);
        float *din = malloc(NA * sizeof(float)), *ds = malloc(NH * sizeof(float));
        float *dx = calloc((size_t)N * C, sizeof(float));
        float *dW = calloc((size_t)H * C, sizeof(float));
        float *db = calloc(H, sizeof(float));
        layer_obj(&c);
        memcpy(din, c.R, NA * sizeof(float));
        route_backward(din, ds, c.in, c.prob, c.on, c.weight, N, H, D, K, c.balance);
        route_scores_backward(dx, dW, db, ds, c.x, c.W, N, C, H);
        float *out = malloc(NA * sizeof(float));
        memcpy(out, c.out, NA * sizeof(float));
        got[k][0] = out; got[k][1] = din; got[k][2] = dx; got[k][3] = dW; got[k][4] = db;
        free(ds);
    }
    size_t sizes[5] = {NA, NA, (size_t)N * C, (size_t)H * C, H};
    for (int i = 0; i < 5; i++) {
        cr_assert(memcmp(got[0][i], got[1][i], sizes[i] * sizeof(float)) == 0, "array %d", i);
        free(got[0][i]);
        free(got[1][i]);
    }
    layer_free(&c);
}

/* ---- the whole routed model ---- */

typedef struct {
    Model m;
    Grads g;
    Activations a;
    int B, T;
    int *tok, *tgt;
    PassOptions po;
    float *on0; /* the choice at the unperturbed point, (L, N, H), or NULL */
} GptCtx;

/* The differentiated objective: the mean loss plus route_balance times the
 * balance loss; with on0, the choice must not move (see layer_obj). */
static double gpt_obj(void *ctx)
{
    GptCtx *c = ctx;
    double loss = gpt_forward(&c->m, &c->a, c->tok, c->tgt, c->B, c->T, &c->po);
    if (c->on0)
        cr_assert(memcmp(c->a.route_on, c->on0, sizeof(float) * c->m.cfg.L * c->a.N *
                         c->m.cfg.H) == 0, "a difference step moved the top-K choice");
    return loss + (double)c->po.route_balance * c->a.balance_loss;
}

/* A model with parameters spread wider than the real init (tu_spread_params), on
 * random tokens. */
static void setup(GptCtx *c, Config cfg, int B, int T, float dropout, uint64_t seed)
{
    char err[256];
    memset(c, 0, sizeof *c);
    cr_assert_eq(model_init(&c->m, &cfg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(grads_init(&c->g, &c->m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acts_init(&c->a, &cfg, B, T, dropout > 0, err, sizeof err), 0, "%s", err);
    tu_spread_params(&c->m.table, c->m.params, seed);
    Rng rng;
    rng_init(&rng, seed, 1);
    c->B = B;
    c->T = T;
    c->tok = malloc(sizeof(int) * B * T);
    c->tgt = malloc(sizeof(int) * B * T);
    for (int i = 0; i < B * T; i++) {
        c->tok[i] = (int)rng_below(&rng, (uint64_t)cfg.V);
        c->tgt[i] = (int)rng_below(&rng, (uint64_t)cfg.V);
    }
    c->po.dropout = dropout;
    c->po.dropout_key = 1234;
}

static void teardown(GptCtx *c)
{
    grads_free(&c->g);
    model_free(&c->m);
    acts_free(&c->a);
    free(c->tok);
    free(c->tgt);
    free(c->on0);
}

static void pass(GptCtx *c)
{
    gpt_obj(c);
    grads_zero(&c->g);
    gpt_backward(&c->m, &c->g, &c->a, c->tok, c->tgt, c->B, c->T, &c->po);
}

/* The smallest gap, over layers and tokens, between the scores of the last chosen
 * head and the best head left out (from the stored softmax: s_h - s_j = ln(p_h /
 * p_j)); infinite when every head is chosen. */
static double choice_margin(const GptCtx *c)
{
    const Config *cfg = &c->m.cfg;
    size_t rows = (size_t)cfg->L * c->a.N;
    double margin = INFINITY;
    for (size_t r = 0; r < rows; r++) {
        const float *p = c->a.route_prob + r * cfg->H, *on = c->a.route_on + r * cfg->H;
        double in = INFINITY, out = 0.0;
        for (int h = 0; h < cfg->H; h++)
            if (on[h] != 0.0f)
                in = fmin(in, p[h]);
            else
                out = fmax(out, p[h]);
        if (out > 0.0)
            margin = fmin(margin, log(in) - log(out));
    }
    return margin;
}

/* A routed model's central differences are taken where the choice cannot move: the
 * routers are drawn again (uniform +-1, wider than the other tensors' +-0.3 so
 * that the scores spread and a draw is found within a few dozen tries at H = 16;
 * the rest of the model as it is) until no token has a score within 0.05 of its
 * choice boundary. A step of 3e-3 moves a router.w score by 3e-3 |x| (x from
 * LayerNorm, |x| < 4 here) and the rest by less, so the choice holds; gpt_obj's
 * check confirms it at every step. */
static void settle_router(GptCtx *c, uint64_t seed)
{
    const ParamSpec *w = params_spec(&c->m.table, P_ROUTER_W);
    const ParamSpec *b = params_spec(&c->m.table, P_ROUTER_B);
    Rng rng;
    rng_init(&rng, seed, 2);
    for (int tries = 0; tries < 500; tries++) {
        gpt_obj(c);
        if (choice_margin(c) >= 0.05)
            return;
        tu_fill(c->m.params + w->offset, w->count, &rng, -1.0f, 1.0f);
        tu_fill(c->m.params + b->offset, b->count, &rng, -1.0f, 1.0f);
    }
    cr_assert_fail("no router draw keeps every score 0.05 from the choice boundary");
}

#define CFG_ROUTED(h, d, k) \
    ((Config){.V = 11, .T = 8, .L = 2, .H = (h), .C = 16, .D = (d), .route_k = (k)})

/* Tolerance: the loss is a float32 mean of O(1) terms, its rounding noise ~1e-7,
 * ~2e-5 to 5e-5 in a numeric gradient at h = 3e-3 (test_gpt.c's reasoning). The
 * route weights shrink the heads' outputs (by up to H: K = H = 16 gives each head
 * about 1/16), and with them the gradients: a tensor's largest entry can be near
 * 1e-2, so atol is 5e-3 of it (test_gpt.c's 1e-3 assumes entries >= 1e-2 and
 * plain heads), and rtol 2e-2. Every router entry is checked
 * (its gradient comes through the chosen weights and the balance loss), six of
 * each other tensor, at a point settle_router picks. */
static void check_model(Config cfg, float dropout, float head_dropout, int gate_noise)
{
    GptCtx c;
    setup(&c, cfg, 2, cfg.T, dropout, 61 + (uint64_t)cfg.H * 4 + (uint64_t)cfg.route_k);
    c.po.head_dropout = head_dropout;
    c.po.gate_noise = gate_noise;
    c.po.route_balance = 0.3f;
    c.po.skip_unrouted = 1; /* training's path; the other is held to it bit for bit below */
    settle_router(&c, 90 + (uint64_t)cfg.H);
    pass(&c);
    size_t non = (size_t)cfg.L * c.a.N * cfg.H;
    c.on0 = malloc(non * sizeof(float));
    memcpy(c.on0, c.a.route_on, non * sizeof(float));
    Rng rng;
    rng_init(&rng, 5, 0);
    int bad = 0;
    const ParamTable *t = &c.m.table;
    for (int k = 0; k < t->n; k++) {
        const ParamSpec *s = &t->spec[k];
        int router = s->kind == P_ROUTER_W || s->kind == P_ROUTER_B;
        int checks = router ? (int)s->count : 6;
        bad += tu_gradcheck(s->name, c.m.params + s->offset, c.g.data + s->offset, s->count,
                            gpt_obj, &c, 3e-3, 2e-2, 5e-3, checks, &rng);
    }
    cr_assert_eq(bad, 0, "%d parameter gradients disagree (H=%d D=%d K=%d)", bad, cfg.H, cfg.D,
                 cfg.route_k);
    teardown(&c);
}

Test(route, model_gradient_matches_finite_differences_1_head)
{
    check_model(CFG_ROUTED(1, 16, 1), 0, 0, 0);
}
Test(route, model_gradient_matches_finite_differences_4_heads)
{
    check_model(CFG_ROUTED(4, 4, 1), 0, 0, 0);
    check_model(CFG_ROUTED(4, 4, 2), 0, 0, 0);
    check_model(CFG_ROUTED(4, 4, 4), 0, 0, 0);
}
Test(route, model_gradient_matches_finite_differences_8_heads)
{
    check_model(CFG_ROUTED(8, 2, 1), 0, 0, 0);
    check_model(CFG_ROUTED(8, 2, 2), 0, 0, 0);
    check_model(CFG_ROUTED(8, 2, 8), 0, 0, 0);
}
Test(route, model_gradient_matches_finite_differences_16_heads)
{
    check_model(CFG_ROUTED(16, 1, 1), 0, 0, 0);
    check_model(CFG_ROUTED(16, 1, 2), 0, 0, 0);
    check_model(CFG_ROUTED(16, 1, 16), 0, 0, 0);
}
/* Routing beside head gates (drawn), attention and residual dropout and head dropout. */
Test(route, model_gradient_matches_finite_differences_with_gates_and_dropouts)
{
    Config cfg = CFG_ROUTED(4, 6, 2);
    cfg.gates = 1;
    check_model(cfg, 0.2f, 0.3f, 1);
}

/* A router with W = 0 and one bias above the others picks the same head for every
 * token: with K = 1 its weight is exactly 1.0, the others' outputs exactly 0, so
 * the routed model is the plain one with every other head silenced by the head
 * mask (PassOptions.head_on), bit for bit: the loss, the probabilities and the
 * gradient of every parameter the two share (the routed table is the plain one
 * followed by the router; the router's W = 0 adds exactly 0 to ln1's input
 * gradient, so the balance loss may be on). */
Test(route, a_router_fixed_on_one_head_is_the_head_mask_bit_for_bit)
{
    enum { H = 4, D = 4, B = 3, T = 8 };
    Config plain_cfg = CFG_ROUTED(H, D, 0), routed_cfg = CFG_ROUTED(H, D, 1);
    GptCtx p, r;
    setup(&p, plain_cfg, B, T, 0, 71);
    setup(&r, routed_cfg, B, T, 0, 71);
    size_t shared = p.m.table.total;
    memcpy(r.m.params, p.m.params, shared * sizeof(float));
    const int pick[2] = {2, 0}; /* the head each layer keeps */
    unsigned char on[2 * H] = {0};
    for (int l = 0; l < 2; l++) {
        on[l * H + pick[l]] = 1;
        for (int h = 0; h < H; h++)
            r.m.w.router_b[l * H + h] = h == pick[l] ? 4.0f : 0.0f;
    }
    memset(r.m.w.router_w, 0, sizeof(float) * 2 * H * 16);
    p.po.head_on = on;
    r.po.route_balance = 0.5f;
    pass(&p);
    pass(&r);
    double lp = gpt_forward(&p.m, &p.a, p.tok, p.tgt, B, T, &p.po);
    double lr = gpt_forward(&r.m, &r.a, r.tok, r.tgt, B, T, &r.po);
    cr_assert(memcmp(&lp, &lr, sizeof lp) == 0, "loss %.17g routed, %.17g masked", lr, lp);
    cr_assert(memcmp(p.a.probs, r.a.probs, sizeof(float) * B * T * 11) == 0);
    for (int k = 0; k < p.m.table.n; k++) {
        const ParamSpec *s = &p.m.table.spec[k];
        cr_assert(memcmp(p.g.data + s->offset, r.g.data + s->offset, s->count * sizeof(float)) == 0,
                  "%s: the gradients differ", s->name);
    }
    /* ... and the router did learn something: the balance loss reaches its bias. */
    int moved = 0;
    for (int i = 0; i < 2 * H; i++)
        moved += r.g.w.router_b[i] != 0.0f;
    cr_assert(moved > 0);
    teardown(&p);
    teardown(&r);
}

/* K = 2 with the two chosen biases equal: each weight is exactly 1/2, which is the
 * masked model with those heads' value rows (qkv.w and qkv.b) halved (a power of
 * two scales every product and sum exactly), so the loss and the probabilities
 * agree bit for bit. */
Test(route, a_router_fixed_on_two_heads_is_the_head_mask_with_halved_values)
{
    enum { H = 8, D = 2, B = 2, T = 8, C = 16, A = H * D };
    GptCtx p, r;
    setup(&p, CFG_ROUTED(H, D, 0), B, T, 0, 73);
    setup(&r, CFG_ROUTED(H, D, 2), B, T, 0, 73);
    memcpy(r.m.params, p.m.params, p.m.table.total * sizeof(float));
    const int pick[2][2] = {{1, 6}, {3, 4}};
    unsigned char on[2 * H] = {0};
    memset(r.m.w.router_w, 0, sizeof(float) * 2 * H * C);
    for (int l = 0; l < 2; l++) {
        for (int h = 0; h < H; h++)
            r.m.w.router_b[l * H + h] = 0.25f * (float)h - 1.0f;
        LayerWeights *lw = &p.m.w.layer[l];
        for (int i = 0; i < 2; i++) {
            int h = pick[l][i];
            on[l * H + h] = 1;
            r.m.w.router_b[l * H + h] = 9.0f;
            for (int row = 2 * A + h * D; row < 2 * A + (h + 1) * D; row++) {
                for (int k = 0; k < C; k++)
                    lw->qkvw[row * C + k] *= 0.5f;
                lw->qkvb[row] *= 0.5f;
            }
        }
    }
    p.po.head_on = on;
    double lp = gpt_forward(&p.m, &p.a, p.tok, p.tgt, B, T, &p.po);
    double lr = gpt_forward(&r.m, &r.a, r.tok, r.tgt, B, T, &r.po);
    for (int i = 0; i < B * T * H; i++)
        cr_assert(r.a.route_weight[i] == 0.0f || r.a.route_weight[i] == 0.5f);
    cr_assert(memcmp(&lp, &lr, sizeof lp) == 0, "loss %.17g routed, %.17g masked", lr, lp);
    cr_assert(memcmp(p.a.probs, r.a.probs, sizeof(float) * B * T * 11) == 0);
    teardown(&p);
    teardown(&r);
}

/* Routing changes the model: the same parameters with K = H and K < H give other
 * losses, and each token's heads differ between tokens. */
Test(route, tokens_choose_different_heads)
{
    GptCtx c;
    setup(&c, CFG_ROUTED(8, 2, 2), 4, 8, 0, 75);
    gpt_obj(&c);
    size_t N = c.a.N;
    int differ = 0;
    for (size_t n = 1; n < N; n++)
        differ += memcmp(c.a.route_on + n * 8, c.a.route_on, 8 * sizeof(float)) != 0;
    cr_assert(differ > 0, "every token chose the same heads");
    int used[8] = {0};
    for (size_t i = 0; i < N * 8; i++)
        used[i % 8] += c.a.route_on[i] != 0.0f;
    for (int h = 0; h < 8; h++)
        cr_assert(used[h] > 0, "head %d never chosen in layer 0", h);
    teardown(&c);
}

static void run_pass(GptCtx *c, int threads, double *loss, float *grads)
{
    omp_set_num_threads(threads);
    *loss = gpt_obj(c);
    grads_zero(&c->g);
    gpt_backward(&c->m, &c->g, &c->a, c->tok, c->tgt, c->B, c->T, &c->po);
    memcpy(grads, c->g.data, c->m.table.total * sizeof(float));
}

/* Sizes past the kernels' tile edges and past the routing's parallel threshold
 * (3 x 37 tokens x 8 heads x 40), with dropout, head dropout and gates on. */
Test(route, one_and_two_threads_give_identical_bits)
{
    GptCtx c;
    Config cfg = {.V = 29, .T = 37, .L = 2, .H = 8, .C = 40, .D = 5, .gates = 1, .route_k = 3};
    setup(&c, cfg, 3, 37, 0.1f, 9);
    c.po.head_dropout = 0.3f;
    c.po.gate_noise = 1;
    c.po.route_balance = 0.1f;
    c.po.skip_unrouted = 1;
    size_t P = c.m.table.total;
    float *g1 = malloc(P * sizeof(float)), *g2 = malloc(P * sizeof(float));
    double l1, l2;
    run_pass(&c, 1, &l1, g1);
    run_pass(&c, 2, &l2, g2);
    cr_assert(memcmp(&l1, &l2, sizeof l1) == 0, "loss %.17g vs %.17g", l1, l2);
    cr_assert(memcmp(g1, g2, P * sizeof(float)) == 0, "gradients differ between 1 and 2 threads");
    free(g1);
    free(g2);
    teardown(&c);
}

/* PassOptions.skip_unrouted changes no bit: with it and without, the same loss,
 * balance loss, probabilities, gradients and head-importance sums, through dropout,
 * head dropout, silenced heads (zeroed, or set to a mean) and gates, for H = 4, 8, 16
 * and K from 1 to H; and gpt_fill_unrouted restores every attention weight the
 * skipping pass left zero. */
static void check_skip(Config cfg, float dropout, float head_dropout, int silence, int mean)
{
    GptCtx c[2];
    int B = 3, L = cfg.L, H = cfg.H, D = cfg.D;
    unsigned char on[2 * 16];
    float *head_mean = malloc(sizeof(float) * L * H * D);
    double *head_grad[2];
    for (int i = 0; i < L * H; i++)
        on[i] = !silence || i % 5 != 1;
    for (int i = 0; i < L * H * D; i++)
        head_mean[i] = 0.01f * (float)(i % 7) - 0.03f;
    for (int k = 0; k < 2; k++) {
        setup(&c[k], cfg, B, cfg.T, dropout, 300 + (uint64_t)H * 20 + (uint64_t)cfg.route_k);
        c[k].po.head_dropout = head_dropout;
        c[k].po.gate_noise = 1;
        c[k].po.route_balance = 0.2f;
        c[k].po.head_on = on;
        c[k].po.head_mean = mean ? head_mean : NULL;
        head_grad[k] = calloc((size_t)L * H, sizeof(double));
        c[k].po.head_grad = head_grad[k];
        c[k].po.skip_unrouted = k;
        pass(&c[k]);
    }
    double l[2];
    for (int k = 0; k < 2; k++)
        l[k] = gpt_forward(&c[k].m, &c[k].a, c[k].tok, c[k].tgt, B, cfg.T, &c[k].po);
    cr_assert(memcmp(&l[0], &l[1], sizeof l[0]) == 0, "loss %.17g skipping, %.17g not", l[1], l[0]);
    cr_assert(memcmp(&c[0].a.balance_loss, &c[1].a.balance_loss, sizeof(double)) == 0);
    cr_assert(memcmp(c[0].a.probs, c[1].a.probs, sizeof(float) * B * cfg.T * cfg.V) == 0);
    cr_assert(memcmp(c[0].g.data, c[1].g.data, c[0].m.table.total * sizeof(float)) == 0,
              "the gradients differ (H=%d K=%d)", H, cfg.route_k);
    cr_assert(memcmp(head_grad[0], head_grad[1], sizeof(double) * L * H) == 0);
    size_t natt = (size_t)L * B * H * cfg.T * cfg.T;
    int zeroed = 0;
    for (size_t i = 0; i < natt && cfg.route_k < H; i++)
        zeroed += c[1].a.att[i] != c[0].a.att[i];
    cr_assert(cfg.route_k == H || zeroed > 0, "no attention weight was skipped");
    gpt_fill_unrouted(&c[1].m, &c[1].a, B, cfg.T);
    cr_assert(memcmp(c[0].a.att, c[1].a.att, natt * sizeof(float)) == 0,
              "the filled attention differs");
    for (int k = 0; k < 2; k++) {
        free(head_grad[k]);
        teardown(&c[k]);
    }
    free(head_mean);
}

Test(route, skipping_unrouted_heads_changes_no_bit)
{
    static const int hk[][3] = {{4, 1, 4}, {4, 2, 4}, {4, 4, 4}, {8, 1, 2}, {8, 3, 2},
                                {8, 7, 2}, {16, 1, 2}, {16, 4, 2}, {16, 15, 2}};
    for (size_t i = 0; i < sizeof hk / sizeof hk[0]; i++) {
        Config cfg = {.V = 13, .T = 37, .L = 2, .H = hk[i][0], .C = hk[i][0] * hk[i][2],
                      .D = hk[i][2], .route_k = hk[i][1]};
        check_skip(cfg, 0, 0, 0, 0);
        check_skip(cfg, 0.1f, 0.3f, 1, 0);
        check_skip(cfg, 0, 0, 1, 1);
        cfg.gates = 1;
        check_skip(cfg, 0.1f, 0, 0, 0);
    }
}

/* The routed table is the plain one followed by router.w (L H, C) and router.b
 * (L, H); params_init draws the plain part's values as the plain model does; the
 * closed count formula agrees; and K outside [0, H] is refused. */
Test(route, routed_parameter_table_extends_the_plain_one)
{
    Config plain = CFG_ROUTED(4, 4, 0), routed = CFG_ROUTED(4, 4, 3);
    ParamTable *tp = malloc(sizeof *tp), *tr = malloc(sizeof *tr);
    params_table_init(tp, &plain);
    params_table_init(tr, &routed);
    cr_assert_eq(tr->n, tp->n + 2);
    cr_assert_eq(tr->total, tp->total + 2 * 4 * 16 + 2 * 4);
    cr_assert_eq(tr->total, config_param_count(&routed));
    cr_assert_eq(tp->total, config_param_count(&plain));
    for (int k = 0; k < tp->n; k++)
        cr_assert(memcmp(&tp->spec[k], &tr->spec[k], sizeof tp->spec[k]) == 0);
    cr_assert_str_eq(tr->spec[tp->n].name, "router.w");
    cr_assert_str_eq(tr->spec[tp->n + 1].name, "router.b");
    float *vp = malloc(tp->total * sizeof(float)), *vr = malloc(tr->total * sizeof(float));
    params_init(tp, vp, 5);
    params_init(tr, vr, 5);
    cr_assert(memcmp(vp, vr, tp->total * sizeof(float)) == 0);
    float *rb = vr + tr->spec[tp->n + 1].offset, *rw = vr + tr->spec[tp->n].offset;
    for (int i = 0; i < 8; i++)
        cr_assert_eq(rb[i], 0.0f);
    cr_assert(rw[0] != 0.0f && fabsf(rw[0]) < 0.2f);
    char err[200];
    routed.route_k = 5;
    cr_assert_eq(config_validate(&routed, err, sizeof err), -1);
    cr_assert(strstr(err, "routed heads K") != NULL, "%s", err);
    routed.route_k = -1;
    cr_assert_eq(config_validate(&routed, err, sizeof err), -1);
    routed.route_k = 4;
    cr_assert_eq(config_validate(&routed, err, sizeof err), 0, "%s", err);
    free(tp); free(tr); free(vp); free(vr);
}

/* A routed model trains: trainer_step (forward, backward, AdamW over the routed
 * table) on one batch at a constant learning rate from the real initialisation,
 * as test_gpt.c's plain model does. The trainer does not pass a balance
 * coefficient yet, so this trains on the mean loss alone. */
Test(route, a_tiny_routed_model_overfits_one_batch)
{
    GptCtx c;
    Config cfg = {.V = 20, .T = 16, .L = 2, .H = 4, .C = 32, .D = 8, .route_k = 2};
    setup(&c, cfg, 4, 16, 0, 17);
    char err[256];
    Trainer t;
    TrainHyper hp = {.lr = 3e-3f, .min_lr = 3e-3f, .steps = 300, .clip = 1.0f, .micro = 1,
                     .adam = {0.9f, 0.99f, 1e-8f, 0.0f}};
    cr_assert_eq(trainer_init(&t, &cfg, 17, err, sizeof err), 0, "%s", err);
    cr_assert_eq(trainer_prepare(&t, &hp, 4, err, sizeof err), 0, "%s", err);
    double first = 0, loss = 0;
    for (int step = 0; step < 300; step++) {
        TrainStep s;
        cr_assert_eq(trainer_step(&t, c.tok, c.tgt, &s), 0, "step %d: loss %g", step, s.loss);
        loss = s.loss;
        if (step == 0)
            first = loss;
    }
    cr_assert(first > 2.5, "initial loss %g should be near ln(20) = 3.0", first);
    cr_assert(loss < 0.1, "loss after 300 steps on one batch is %g, expected < 0.1", loss);
    trainer_free(&t);
    teardown(&c);
}
