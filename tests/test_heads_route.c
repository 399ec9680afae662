/* Tests for analysis/heads_route: the routing shares, weights and relation
 * shares on hand-built route arrays with known answers, the serving rule, and
 * the HEADS_ROUTING stage of heads_measure on filled activations and on a
 * routed model whose router is fixed on one head. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads_measure.h"
#include "analysis/heads_route.h"
#include "model/gpt.h"
#include "testutil.h"

/* Activations with only what the routing reads (and uniform causal attention,
 * for the stages heads_measure runs around it): L layers of H heads over B
 * windows of T tokens, no head chosen yet. */
typedef struct {
    Activations a;
    float *att, *on, *weight;
} RouteActs;

static void racts_init(RouteActs *f, int L, int H, int B, int T)
{
    memset(f, 0, sizeof *f);
    size_t N = (size_t)B * T;
    f->att = calloc((size_t)L * B * H * T * T, sizeof(float));
    f->on = calloc((size_t)L * N * H, sizeof(float));
    f->weight = calloc((size_t)L * N * H, sizeof(float));
    cr_assert(f->att && f->on && f->weight);
    f->a.L = (size_t)L;
    f->a.H = (size_t)H;
    f->a.B = B;
    f->a.T = T;
    f->a.N = N;
    f->a.att = f->att;
    f->a.route_on = f->on;
    f->a.route_weight = f->weight;
    for (int l = 0; l < L; l++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                float *att = (float *)heads_att(&f->a, l, b, h, T);
                for (int i = 0; i < T; i++)
                    for (int j = 0; j <= i; j++)
                        att[(size_t)i * T + j] = 1.0f / (float)(i + 1);
            }
}

static void racts_free(RouteActs *f)
{
    free(f->att);
    free(f->on);
    free(f->weight);
}

/* Position t of layer l chooses head h with weight g. */
static void choose(RouteActs *f, int l, size_t t, int h, float g)
{
    size_t at = (size_t)l * f->a.N * f->a.H + t * f->a.H + (size_t)h;
    f->on[at] = 1.0f;
    f->weight[at] = g;
}

/* The routing of one batch: its head sums and, with key (or rare), relation q's rows. */
static void finish_one(HeadsRouting *r, RouteActs *f, int q, const int *key, int rare,
                       const HeadStats *st, int K, int served)
{
    int L = (int)f->a.L, H = (int)f->a.H, n = L * H;
    RouteSums s;
    cr_assert_eq(route_sums_init(&s, n), 0);
    cr_assert_eq(heads_routing_init(r, L, H), 0);
    heads_add_route(&s, &f->a, f->a.B, f->a.T);
    if (key || rare)
        heads_add_route_relation(&s, q, &f->a, key, f->a.B, f->a.T);
    HeadStats *zero = calloc((size_t)n, sizeof *zero);
    heads_route_finish(r, &s, st ? st : zero, K, served);
    free(zero);
    route_sums_free(&s);
}

Test(heads_route, a_router_always_on_head_1_gives_it_share_one_and_the_others_zero)
{
    enum { L = 2, H = 3, B = 2, T = 16 };
    RouteActs f;
    racts_init(&f, L, H, B, T);
    for (int l = 0; l < L; l++)
        for (size_t t = 0; t < (size_t)B * T; t++)
            choose(&f, l, t, 1, 1.0f);
    HeadsRouting r;
    finish_one(&r, &f, 0, NULL, 0, NULL, 1, 0);
    cr_assert_eq(r.K, 1);
    cr_assert_float_eq(r.tokens, B * T, 0);
    for (int k = 0; k < L * H; k++) {
        cr_assert_float_eq(r.share[k], k % H == 1 ? 1.0 : 0.0, 0, "head %d", k);
        cr_assert_float_eq(r.weight[k], k % H == 1 ? 1.0 : 0.0, 0, "head %d", k);
    }
    heads_routing_free(&r);
    racts_free(&f);
}

Test(heads_route, shares_sum_to_k_and_weights_are_means_when_chosen)
{
    /* K = 2: the first half of the positions take heads 0 and 1 (0.75, 0.25), the
     * second half heads 1 and 2 (0.5, 0.5). */
    enum { L = 1, H = 3, B = 1, T = 16 };
    RouteActs f;
    racts_init(&f, L, H, B, T);
    for (size_t t = 0; t < T; t++) {
        if (t < T / 2) {
            choose(&f, 0, t, 0, 0.75f);
            choose(&f, 0, t, 1, 0.25f);
        } else {
            choose(&f, 0, t, 1, 0.5f);
            choose(&f, 0, t, 2, 0.5f);
        }
    }
    HeadsRouting r;
    finish_one(&r, &f, 0, NULL, 0, NULL, 2, 0);
    cr_assert_float_eq(r.share[0], 0.5, 1e-15);
    cr_assert_float_eq(r.share[1], 1.0, 1e-15);
    cr_assert_float_eq(r.share[2], 0.5, 1e-15);
    cr_assert_float_eq(r.share[0] + r.share[1] + r.share[2], 2.0, 1e-15, "the K of a layer");
    cr_assert_float_eq(r.weight[0], 0.75, 1e-15);
    cr_assert_float_eq(r.weight[1], 0.375, 1e-15);
    cr_assert_float_eq(r.weight[2], 0.5, 1e-15);
    heads_routing_free(&r);
    racts_free(&f);
}

/* Relation rows 6, 9 and 12 of window 0 and row 5 of window 1 (row 2 is before
 * the skip, 4 at T = 16) route to head 2; every other position to head 0. */
static void relation_to_head_2(RouteActs *f, int *key)
{
    enum { T = 16 };
    for (int t = 0; t < 2 * T; t++)
        key[t] = -1;
    key[2] = 0;
    key[6] = 1;
    key[9] = 3;
    key[12] = 0;
    key[T + 5] = 2;
    for (int t = 0; t < 2 * T; t++)
        choose(f, 0, (size_t)t, key[t] >= 0 && t != 2 ? 2 : 0, 1.0f);
}

Test(heads_route, a_relation_whose_rows_all_route_to_head_2_gives_it_share_one)
{
    enum { L = 1, H = 3, B = 2, T = 16 };
    RouteActs f;
    racts_init(&f, L, H, B, T);
    int key[B * T];
    relation_to_head_2(&f, key);
    cr_assert_eq(heads_skip(T), 4);
    HeadsRouting r;
    finish_one(&r, &f, HEADS_REL_BRACKET, key, 0, NULL, 1, 0);
    const double *share = r.rel_share + (size_t)HEADS_REL_BRACKET * r.n;
    cr_assert_float_eq(r.rows[HEADS_REL_BRACKET], 4.0, 0, "row 2 is not scored");
    cr_assert_float_eq(share[2], 1.0, 0);
    cr_assert_float_eq(share[0], 0.0, 0);
    cr_assert_float_eq(share[1], 0.0, 0);
    cr_assert_eq(r.top[HEADS_REL_BRACKET], 2);
    cr_assert_float_eq(r.share[2], 4.0 / 32.0, 1e-15, "its share over every position");
    cr_assert_eq(r.top[HEADS_REL_PREV], -1, "a relation without rows has no top head");
    heads_routing_free(&r);
    racts_free(&f);
}

Test(heads_route, the_rare_relation_counts_every_row_from_its_first)
{
    enum { L = 1, H = 2, B = 2, T = 16 };
    RouteActs f;
    racts_init(&f, L, H, B, T);
    for (int t = 0; t < B * T; t++)
        choose(&f, 0, (size_t)t, t % T < 10 ? 0 : 1, 1.0f);
    HeadsRouting r;
    finish_one(&r, &f, HEADS_REL_RARE, NULL, 1, NULL, 1, 0);
    int first = heads_rare_first_row(T);
    cr_assert_eq(first, 4);
    cr_assert_float_eq(r.rows[HEADS_REL_RARE], B * (T - first), 0);
    const double *share = r.rel_share + (size_t)HEADS_REL_RARE * r.n;
    cr_assert_float_eq(share[0], 6.0 / 12.0, 1e-15, "rows 4..9 of each window");
    cr_assert_float_eq(share[1], 6.0 / 12.0, 1e-15);
    cr_assert_eq(r.top[HEADS_REL_RARE], 0, "a tie goes to the lower head");
    heads_routing_free(&r);
    racts_free(&f);
}

Test(heads_route, the_top_routed_head_serves_when_heads_serves_says_so)
{
    enum { L = 1, H = 3, B = 2, T = 16, Q = HEADS_REL_BRACKET };
    RouteActs f;
    racts_init(&f, L, H, B, T);
    int key[B * T];
    relation_to_head_2(&f, key);
    HeadStats st[H] = {{0}};
    /* Head 2 attends above the bar and is needed; head 1 attends but is not. */
    st[2].rel[Q] = heads_rel_table[Q].bar + 0.2;
    st[2].costed = 1;
    st[2].cost[Q] = HEADS_NEEDED_SHARE + 0.1;
    st[1].rel[Q] = heads_rel_table[Q].bar + 0.2;
    st[1].costed = 1;
    cr_assert(heads_serves(&st[2], Q) && !heads_serves(&st[1], Q));
    HeadsRouting r;
    finish_one(&r, &f, Q, key, 0, st, 1, 1);
    cr_assert_eq(r.top[Q], 2);
    cr_assert_eq(r.top_serves[Q], 1);
    cr_assert_eq(r.nserve[Q], 1);
    cr_assert_eq(r.serve_top[Q], 2);
    heads_routing_free(&r);
    /* The same rows routed to head 0, which does not serve: the serving head is
     * still named, with the share it gets (0). */
    memset(f.on, 0, sizeof(float) * B * T * H);
    for (int t = 0; t < B * T; t++)
        choose(&f, 0, (size_t)t, 0, 1.0f);
    finish_one(&r, &f, Q, key, 0, st, 1, 1);
    cr_assert_eq(r.top[Q], 0);
    cr_assert_eq(r.top_serves[Q], 0);
    cr_assert_eq(r.serve_top[Q], 2);
    cr_assert_float_eq(r.rel_share[(size_t)Q * r.n + 2], 0.0, 0);
    heads_routing_free(&r);
    /* Serving not measured (no causal passes): nothing is claimed. */
    finish_one(&r, &f, Q, key, 0, st, 1, 0);
    cr_assert_eq(r.served, 0);
    cr_assert_eq(r.top_serves[Q], 0);
    cr_assert_eq(r.nserve[Q], 0);
    cr_assert_eq(r.serve_top[Q], -1);
    heads_routing_free(&r);
    racts_free(&f);
}

/* heads_measure on filled activations (./train --heads-every's way in): the
 * stage runs on the scored windows when asked for and the model routes. */
static void measure_filled(HeadsMeasured *hm, RouteActs *f, unsigned stages)
{
    enum { T = 16 };
    int tokens[2 * T];
    for (int t = 0; t < 2 * T; t++)
        tokens[t] = "ab(cdef)gh(ijk)lq(rs)tu\"vw\"xyzab"[t];
    Tokenizer tok;
    unsigned char b[256];
    for (int c = 0; c < 256; c++)
        b[c] = (unsigned char)c;
    cr_assert_eq(tok_build(&tok, b, 256, NULL, 0), 0);
    HeadsWindows w;
    cr_assert_eq(heads_windows_batch(&w, tokens, 2, T, NULL, 0), 0);
    cr_assert_eq(heads_measure_init(hm, (int)f->a.L, (int)f->a.H, 0, 0, NULL, 0), 0);
    HeadsMeasureIn in = {.what = HEADS_ROWS | HEADS_WINDOW_RELATIONS | stages, .tok = &tok,
                         .w = &w, .filled = 1, .window_relations = HEADS_REL_TEXT};
    cr_assert_eq(heads_measure(hm, &in, &f->a, NULL, 0), 0);
    heads_windows_free(&w);
    tok_free(&tok);
}

Test(heads_route, the_stage_measures_filled_activations_only_when_asked_and_routed)
{
    enum { L = 2, H = 2, B = 2, T = 16 };
    RouteActs f;
    racts_init(&f, L, H, B, T);
    for (int l = 0; l < L; l++)
        for (size_t t = 0; t < (size_t)B * T; t++)
            choose(&f, l, t, 1, 1.0f);
    HeadsMeasured hm;
    measure_filled(&hm, &f, HEADS_ROUTING);
    cr_assert_eq(hm.route.K, 1, "K from the choices when no model is given");
    cr_assert_float_eq(hm.route.tokens, B * T, 0);
    for (int k = 0; k < L * H; k++)
        cr_assert_float_eq(hm.route.share[k], k % H == 1 ? 1.0 : 0.0, 0);
    const double *prev = hm.route.rel_share + (size_t)HEADS_REL_PREV * hm.n;
    cr_assert_float_eq(hm.route.rows[HEADS_REL_PREV], hm.rel[HEADS_REL_PREV].rows, 0,
                       "the relation's own rows");
    cr_assert_float_eq(prev[1], 1.0, 0);
    cr_assert_eq(hm.route.top[HEADS_REL_PREV], 1);
    double entropy = hm.st[0].entropy;
    heads_measure_free(&hm);
    /* Not asked for: nothing, and the heads' numbers are the same. */
    measure_filled(&hm, &f, 0);
    cr_assert_eq(hm.route.K, 0);
    cr_assert(hm.st[0].entropy == entropy);
    heads_measure_free(&hm);
    /* A plain model (no route arrays): nothing even when asked. */
    f.a.route_on = NULL;
    f.a.route_weight = NULL;
    measure_filled(&hm, &f, HEADS_ROUTING);
    cr_assert_eq(hm.route.K, 0);
    heads_measure_free(&hm);
    racts_free(&f);
}

Test(heads_route, a_routed_model_fixed_on_one_head_routes_every_relation_there)
{
    /* The router's W = 0 and its bias picks head pick[l] of each layer: every
     * token, and so every relation's rows, goes there with weight 1. The relation
     * pass runs the model over the text's consecutive windows. */
    enum { H = 4, T = 16, NWIN = 3 };
    Config cfg = {.V = 256, .T = T, .L = 2, .H = H, .C = 16, .D = 4, .route_k = 1};
    char err[256];
    Model m;
    Activations a;
    cr_assert_eq(model_init(&m, &cfg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acts_init(&a, &cfg, 2, T, 0, err, sizeof err), 0, "%s", err);
    tu_spread_params(&m.table, m.params, 17);
    const int pick[2] = {3, 1};
    memset(m.w.router_w, 0, sizeof(float) * 2 * H * 16);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < H; h++)
            m.w.router_b[l * H + h] = h == pick[l] ? 4.0f : 0.0f;
    const char *text = "ab(cd)ef ab(cd)eg (x) ab(cd)ef \"q\" ab(cd)ef ab(cd)ez..";
    TokenId ids[NWIN * T + 1];
    for (int t = 0; t <= NWIN * T; t++)
        ids[t] = (unsigned char)text[t];
    Tokenizer tok;
    unsigned char b[256];
    for (int c = 0; c < 256; c++)
        b[c] = (unsigned char)c;
    cr_assert_eq(tok_build(&tok, b, 256, NULL, 0), 0);
    uint64_t *counts = calloc(256, sizeof *counts);
    heads_token_counts(counts, ids, NWIN * T + 1, 256);
    int x[T];
    for (int t = 0; t < T; t++)
        x[t] = ids[t];
    HeadsWindows w;
    cr_assert_eq(heads_windows_one(&w, x, T, T, &tok, 5, err, sizeof err), 0, "%s", err);
    HeadsMeasured hm;
    cr_assert_eq(heads_measure_init(&hm, 2, H, T, 0, err, sizeof err), 0, "%s", err);
    HeadsMeasureIn in = {.what = HEADS_ROWS | HEADS_RELATIONS | HEADS_ROUTING, .m = &m,
                         .tok = &tok, .w = &w, .ids = ids, .nids = NWIN * T + 1, .text_T = T,
                         .rel_windows = NWIN, .causal_windows = NWIN, .counts = counts};
    cr_assert_eq(heads_measure(&hm, &in, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(hm.route.K, 1);
    cr_assert_float_eq(hm.route.tokens, NWIN * T, 0, "the relation pass's positions");
    for (int k = 0; k < 2 * H; k++) {
        int chosen = k % H == pick[k / H];
        cr_assert_float_eq(hm.route.share[k], chosen ? 1.0 : 0.0, 0, "head %d", k);
        cr_assert_float_eq(hm.route.weight[k], chosen ? 1.0 : 0.0, 0, "head %d", k);
    }
    for (int q = 0; q < HEADS_REL_TEXT; q++) {
        cr_assert_float_eq(hm.route.rows[q], hm.rsums[q].rows, 0, "%s", heads_rel_table[q].name);
        if (hm.route.rows[q] == 0)
            continue;
        cr_assert_float_eq(hm.route.rel_share[(size_t)q * hm.n + pick[0]], 1.0, 0);
        cr_assert_float_eq(hm.route.rel_share[(size_t)q * hm.n + H + pick[1]], 1.0, 0);
        cr_assert_eq(hm.route.top[q], pick[0], "the tie between layers goes to layer 0");
    }
    cr_assert(hm.route.rows[HEADS_REL_PREV] > 0 && hm.route.rows[HEADS_REL_BRACKET] > 0);
    /* Window 0's choices, kept with the heatmaps. */
    cr_assert_not_null(hm.route_text);
    for (int l = 0; l < 2; l++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                cr_assert_eq(hm.route_text[((size_t)l * T + t) * H + h], h == pick[l]);
    heads_measure_free(&hm);
    heads_windows_free(&w);
    tok_free(&tok);
    free(counts);
    acts_free(&a);
    model_free(&m);
}
