/* Minimal pairs and head ablation (analysis/pairs.h): the pairs of a hand-written
 * text at byte level and with byte pairs, their scores on hand-set logits, and a
 * hand-built model in which one head alone carries the pairs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/pairs.h"
#include "model/gpt.h"

/* A text with one relation of every kind, each written by hand with its
 * broken form, as the generator would plant them. */
static const char TEXT[] = "The dog ran.\n"
                           "Two big dogs near the box run (to it).\n"
                           "The cup was near the dog because it was hungry, so the dog hid.\n"
                           "Mira saw Mira.\n"
                           "He said \"hi\".\n";

static size_t at_nth(const char *needle, int nth)
{
    const char *p = TEXT - 1;
    for (int k = 0; k <= nth; k++) {
        p = strstr(p + 1, needle);
        cr_assert_not_null(p, "%s #%d", needle, nth);
    }
    return (size_t)(p - TEXT);
}

static SynthRelation rel(SynthRelKind kind, size_t query, size_t key, size_t form, size_t len,
                         const char *alt0, const char *alt1)
{
    SynthRelation r = {.kind = kind, .query = query, .key = key, .form = form,
                       .form_len = len};
    snprintf(r.alt[0], SYNTH_ALT_CAP, "%s", alt0);
    snprintf(r.alt[1], SYNTH_ALT_CAP, "%s", alt1);
    return r;
}

/* The relations of TEXT in order of query: agreement (run -> dogs), determiner
 * (dogs -> Two), bracket (')' -> '('), coreference (the second dog -> the first,
 * against "cup" and "cat"), and names (the second Mira's letters). */
static size_t text_relations(SynthRelation *r)
{
    size_t n = 0, two = at_nth("Two", 0), dogs = at_nth("dogs", 0), run = at_nth("run (", 0);
    size_t open = at_nth("(", 0), close = at_nth(")", 0);
    size_t dog1 = at_nth("dog because", 0), dog2 = at_nth("dog hid", 0);
    size_t mira1 = at_nth("Mira", 0), mira2 = at_nth("Mira", 1);
    r[n++] = rel(SYNTH_REL_DET, dogs + 2, two + 2, dogs, 4, "dog", "");
    r[n++] = rel(SYNTH_REL_AGREE, run + 2, dogs + 3, run, 3, "runs", "");
    r[n++] = rel(SYNTH_REL_BRACKET, close - 1, open, close, 1, "\"", "");
    r[n++] = rel(SYNTH_REL_COREF, dog2 - 1, dog1, dog2, 3, "cup", "cat");
    for (size_t j = 0; j < 3; j++)
        r[n++] = rel(SYNTH_REL_NAMES, mira2 + j, mira1 + j + 1, 0, 0, "", "");
    return n;
}

static long text_pairs(MinimalPair *out, size_t *skipped, const Tokenizer *tok, TokenId *ids,
                       size_t *nids)
{
    SynthRelation r[16];
    size_t nr = text_relations(r), nb = strlen(TEXT);
    char err[256];
    long n = tok_encode(tok, (const unsigned char *)TEXT, nb, ids, "text", err, sizeof err);
    cr_assert_gt(n, 0, "%s", err);
    *nids = (size_t)n;
    size_t start[sizeof TEXT + 1];
    start[0] = 0;
    for (long t = 0; t < n; t++) {
        size_t len;
        tok_piece(tok, ids[t], &len);
        start[t + 1] = start[t] + len;
    }
    return pairs_from_planted(out, nr * SYNTH_ALTS, skipped, r, nr, 0,
                              (const unsigned char *)TEXT, nb, ids, start, (size_t)n, tok, NULL, 0);
}

static int byte_id(const Tokenizer *tok, char c)
{
    return tok->id[(unsigned char)c];
}

Test(pairs, a_hand_written_text_gives_each_relations_pair_at_byte_level)
{
    Tokenizer tok;
    cr_assert_eq(tok_build(&tok, (const unsigned char *)TEXT, strlen(TEXT), NULL, 0), 0);
    MinimalPair p[32];
    TokenId ids[sizeof TEXT];
    size_t skipped, nids;
    long n = text_pairs(p, &skipped, &tok, ids, &nids);
    cr_assert_eq(n, 8);
    cr_assert_eq(skipped, 0);
    size_t dogs = at_nth("dogs", 0), run = at_nth("run (", 0), close = at_nth(")", 0);
    size_t dog2 = at_nth("dog hid", 0), mira2 = at_nth("Mira", 1);
    MinimalPair want[8] = {
        {HEADS_REL_DET, dogs + 2, at_nth("Two", 0) + 2, byte_id(&tok, 's'), byte_id(&tok, ' ')},
        {HEADS_REL_AGREE, run + 2, dogs + 3, byte_id(&tok, ' '), byte_id(&tok, 's')},
        {HEADS_REL_BRACKET, close - 1, at_nth("(", 0), byte_id(&tok, ')'), byte_id(&tok, '"')},
        {HEADS_REL_COREF, dog2 - 1, at_nth("dog because", 0), byte_id(&tok, 'd'),
         byte_id(&tok, 'c')},
        {PAIRS_COREF_CLASS, dog2 - 1, at_nth("dog because", 0), byte_id(&tok, 'd'),
         byte_id(&tok, 'c')},
        {HEADS_REL_NAMES, mira2, at_nth("Mira", 0) + 1, byte_id(&tok, 'i'), -1},
        {HEADS_REL_NAMES, mira2 + 1, at_nth("Mira", 0) + 2, byte_id(&tok, 'r'), -1},
        {HEADS_REL_NAMES, mira2 + 2, at_nth("Mira", 0) + 3, byte_id(&tok, 'a'), -1},
    };
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(p[i].set, want[i].set, "pair %d", i);
        cr_assert_eq(p[i].row, want[i].row, "pair %d: row %zu, want %zu", i, p[i].row,
                     want[i].row);
        cr_assert_eq(p[i].key, want[i].key, "pair %d", i);
        cr_assert_eq(p[i].right, want[i].right, "pair %d", i);
        cr_assert_eq(p[i].wrong, want[i].wrong, "pair %d", i);
        cr_assert_eq((size_t)p[i].right, (size_t)ids[p[i].row + 1], "pair %d", i);
    }
    tok_free(&tok);
}

/* With byte pairs the pair sits on the first token where the encodings of the
 * line and of the broken line differ: the tokens before it are the text's, the
 * right token is the text's next one, and the wrong token's piece is where the
 * broken line goes on. */
Test(pairs, with_byte_pairs_each_pair_sits_where_the_encodings_part)
{
    size_t nb = strlen(TEXT), reps = 40;
    unsigned char *train = malloc(nb * reps);
    for (size_t i = 0; i < reps; i++)
        memcpy(train + i * nb, TEXT, nb);
    Tokenizer tok;
    char err[256];
    cr_assert_eq(tok_build(&tok, train, nb * reps, NULL, 0), 0);
    cr_assert_eq(tok_learn(&tok, train, nb * reps, tok.V + 60, err, sizeof err), 0, "%s", err);
    free(train);
    cr_assert_gt(tok.nmerges, 10, "the test needs merges");
    MinimalPair p[32];
    TokenId ids[sizeof TEXT];
    size_t skipped, nids;
    long n = text_pairs(p, &skipped, &tok, ids, &nids);
    cr_assert_eq(skipped, 0);
    int per_set[PAIRS_SETS] = {0};
    SynthRelation r[16];
    text_relations(r);
    for (long i = 0; i < n; i++) {
        per_set[p[i].set]++;
        cr_assert(p[i].key <= p[i].row && p[i].row + 1 < nids);
        cr_assert_eq(p[i].right, ids[p[i].row + 1], "pair %ld", i);
        cr_assert_neq(p[i].right, p[i].wrong);
        if (p[i].wrong < 0)
            continue;
        /* The broken line: the text with the alternative in place of the form. */
        const SynthRelation *x = p[i].set == HEADS_REL_DET ? &r[0]
                               : p[i].set == HEADS_REL_AGREE ? &r[1]
                               : p[i].set == HEADS_REL_BRACKET ? &r[2] : &r[3];
        const char *alt = x->alt[p[i].set == PAIRS_COREF_CLASS];
        char broken[sizeof TEXT + 16];
        snprintf(broken, sizeof broken, "%.*s%s%s", (int)x->form, TEXT, alt,
                 TEXT + x->form + x->form_len);
        unsigned char prefix[sizeof TEXT + 16];
        size_t k = tok_decode(&tok, ids, p[i].row + 1, prefix), len;
        const unsigned char *piece = tok_piece(&tok, p[i].wrong, &len);
        memcpy(prefix + k, piece, len);
        cr_assert(memcmp(prefix, broken, k + len) == 0, "pair %ld: %.*s", i, (int)(k + len),
                  prefix);
    }
    for (int s = 0; s < PAIRS_SETS; s++)
        if (s == HEADS_REL_DET || s == HEADS_REL_AGREE || s == HEADS_REL_BRACKET ||
            s == HEADS_REL_COREF || s == PAIRS_COREF_CLASS)
            cr_assert_eq(per_set[s], 1, "set %s", pairs_set_name(s));
        else if (s == HEADS_REL_NAMES)
            cr_assert(per_set[s] >= 1 && per_set[s] <= 3);
        else
            cr_assert_eq(per_set[s], 0, "set %s", pairs_set_name(s));
    tok_free(&tok);
}

/* Scores on hand-set logits (V = 4, two windows of T = 16, skip 4). */
Test(pairs, scores_count_the_rows_a_window_can_see)
{
    enum { V = 4, T = 16, B = 2 };
    float logits[B * T][V] = {{0}}, losses[B * T] = {0};
    Activations a = {.V = V, .logits = &logits[0][0], .losses = losses};
    const float row5[V] = {0, 3, 1, 0}, row6[V] = {1, 2, 0.5f, 0}, row21[V] = {0, 0, 4, 1};
    memcpy(logits[5], row5, sizeof row5);
    memcpy(logits[6], row6, sizeof row6);
    memcpy(logits[21], row21, sizeof row21);
    losses[5] = 0.5f;
    losses[6] = 1.5f;
    losses[21] = 0.25f;
    const MinimalPair p[] = {
        {HEADS_REL_AGREE, 2, 0, 1, 2},   /* before the skip: left out */
        {HEADS_REL_AGREE, 5, 2, 1, 2},   /* 3 - 1 = +2, right */
        {HEADS_REL_NAMES, 6, 1, 0, -1},  /* 1 - 2 (the best other) = -1, wrong */
        {HEADS_REL_AGREE, 20, 10, 1, 2}, /* its key is in the window before: left out */
        {HEADS_REL_AGREE, 21, 17, 3, 2}, /* 1 - 4 = -3, wrong */
    };
    PairSums s[PAIRS_SETS] = {{0}};
    size_t next = 0;
    pairs_add(s, &a, p, 5, 0, B, T, &next);
    PairScore agree, names;
    pairs_finish(&agree, &s[HEADS_REL_AGREE]);
    pairs_finish(&names, &s[HEADS_REL_NAMES]);
    cr_assert_eq(agree.pairs, 2);
    cr_assert_float_eq(agree.accuracy, 0.5, 1e-12);
    cr_assert_float_eq(agree.logit_diff, (2.0 - 3.0) / 2, 1e-12);
    cr_assert_float_eq(agree.loss, (0.5 + 0.25) / 2, 1e-12);
    cr_assert_eq(names.pairs, 1);
    cr_assert_float_eq(names.accuracy, 0.0, 1e-12);
    cr_assert_float_eq(names.logit_diff, -1.0, 1e-12);
    /* The cost: the share of a positive base difference taken away; for a
     * relation without pairs, the share its loss rises by. */
    PairScore base = {.pairs = 10, .logit_diff = 2.0}, abl = {.pairs = 10, .logit_diff = 0.5};
    cr_assert_float_eq(pairs_cost(&base, &abl, 0, 0), 0.75, 1e-12);
    PairScore none = {0};
    cr_assert_float_eq(pairs_cost(&none, &none, 2.0, 2.5), 0.25, 1e-12);
    base.logit_diff = -1.0;
    cr_assert_eq(pairs_cost(&base, &abl, 1.0, 3.0), 0.0, "no cost without a margin to lose");
}

/* A model in which only head 0 of layer 1 reaches the output (every other
 * head's columns of its layer's output projection are zero): silencing it
 * flips every pair built to tell it apart, silencing any other head changes
 * nothing at all, to the bit. */
Test(pairs, silencing_the_one_head_that_carries_a_relation_flips_its_pairs)
{
    enum { T = 16, L = 2, H = 2 };
    Config cfg = {.V = 12, .T = T, .L = L, .H = H, .C = 16, .D = 8};
    Model m;
    char err[256];
    cr_assert_eq(model_init(&m, &cfg, err, sizeof err), 0, "%s", err);
    params_init(&m.table, m.params, 3);
    int A = H * cfg.D, carrier = 1 * H + 0;
    for (int l = 0; l < L; l++)
        for (int c = 0; c < cfg.C; c++)
            for (int x = 0; x < A; x++) {
                float *w = &m.w.layer[l].projw[(size_t)c * A + x];
                if (l * H + x / cfg.D != carrier)
                    *w = 0.0f;
                else
                    *w *= 40.0f; /* loud enough to move the argmax */
            }
    Activations a;
    cr_assert_eq(acts_init(&a, &cfg, 1, T, 0, err, sizeof err), 0, "%s", err);
    int tokens[T], targets[T];
    for (int t = 0; t < T; t++) {
        tokens[t] = (t * 7 + 3) % cfg.V;
        targets[t] = 0;
    }
    unsigned char on[L * H];
    float full[T][12], without[T][12];
    memset(on, 1, sizeof on);
    gpt_forward(&m, &a, tokens, targets, 1, T, &(PassOptions){.head_on = on});
    memcpy(full, a.logits, sizeof full);
    on[carrier] = 0;
    gpt_forward(&m, &a, tokens, targets, 1, T, &(PassOptions){.head_on = on});
    memcpy(without, a.logits, sizeof without);
    /* A pair at every scored row where the carrier changes the argmax: right is
     * the model's choice with it, wrong the choice without it. */
    MinimalPair p[T];
    size_t np = 0;
    for (int i = heads_skip(T); i < T; i++) {
        int r = 0, w = 0;
        for (int v = 1; v < cfg.V; v++) {
            r = full[i][v] > full[i][r] ? v : r;
            w = without[i][v] > without[i][w] ? v : w;
        }
        if (r != w)
            p[np++] = (MinimalPair){HEADS_REL_AGREE, (size_t)i, 0, r, w};
    }
    cr_assert_geq(np, 2, "the carrier moves the argmax at %zu rows", np);
    PairScore score[L * H + 1];
    for (int k = 0; k <= L * H; k++) {
        memset(on, 1, sizeof on);
        if (k < L * H)
            on[k] = 0;
        gpt_forward(&m, &a, tokens, targets, 1, T, &(PassOptions){.head_on = on});
        PairSums s[PAIRS_SETS] = {{0}};
        size_t next = 0;
        pairs_add(s, &a, p, np, 0, 1, T, &next);
        pairs_finish(&score[k], &s[HEADS_REL_AGREE]);
    }
    const PairScore *base = &score[L * H];
    cr_assert_eq(base->accuracy, 1.0);
    cr_assert_eq(score[carrier].accuracy, 0.0);
    cr_assert_gt(pairs_cost(base, &score[carrier], 0, 0), 1.0, "more than the margin is lost");
    for (int k = 0; k < L * H; k++)
        if (k != carrier) {
            cr_assert_eq(score[k].logit_diff, base->logit_diff, "head %d", k);
            cr_assert_eq(score[k].accuracy, base->accuracy, "head %d", k);
            cr_assert_eq(pairs_cost(base, &score[k], 0, 0), 0.0, "head %d", k);
        }
    acts_free(&a);
    model_free(&m);
}
