/* Tests for analysis/heads: every metric on hand-built attention matrices whose
 * answers are known exactly (previous-token, uniform, sink, delimiter and
 * induction patterns, JSD of identical and disjoint heads, the effective
 * number of heads, the types), the relations, and thread-count identity. The
 * end-to-end runs of `infer --heads` are in test_heads_cli.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "analysis/heads.h"
#include "analysis/heads_measure.h"
#include "analysis/pairs.h"
#include "tests/testutil.h"

/* A planted relation without a minimal pair: which kind, query, key. */
#define REL(which, q, k) {.kind = SYNTH_REL_##which, .query = (q), .key = (k)}

enum { PAT_PREV, PAT_UNIFORM, PAT_SINK, PAT_SELF, PAT_INDUCTION, PAT_DUPLICATE };

/* Fills att[T][T] with one pattern; rows with no such key fall back to self.
 * P is the probe half-length for the induction and duplicate patterns. */
static void fill_pattern(float *att, int T, int pat, int P)
{
    memset(att, 0, (size_t)T * T * sizeof(float));
    for (int i = 0; i < T; i++) {
        float *row = att + (size_t)i * T;
        int key = i;
        switch (pat) {
        case PAT_PREV: key = i > 0 ? i - 1 : 0; break;
        case PAT_SINK: key = 0; break;
        case PAT_INDUCTION: key = i >= P ? i - P + 1 : i; break;
        case PAT_DUPLICATE: key = i >= P ? i - P : i; break;
        case PAT_UNIFORM:
            for (int j = 0; j <= i; j++)
                row[j] = 1.0f / (float)(i + 1);
            continue;
        default: break;
        }
        row[key] = 1.0f;
    }
}

/* A stand-in for gpt_forward's output: L layers of H heads over B windows,
 * head k of window b holding pattern pats[k]. */
typedef struct {
    Activations a;
    float *buf;
} FakeActs;

static void fake_init(FakeActs *f, int L, int H, int B, int T, const int *pats, int P)
{
    memset(f, 0, sizeof *f);
    f->buf = calloc((size_t)L * B * H * T * T, sizeof(float));
    cr_assert_not_null(f->buf);
    f->a.L = (size_t)L;
    f->a.H = (size_t)H;
    f->a.B = B;
    f->a.T = T;
    f->a.att = f->buf;
    for (int l = 0; l < L; l++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                fill_pattern((float *)heads_att(&f->a, l, b, h, T), T, pats[l * H + h], P);
}

static HeadStats stats_of(const FakeActs *f, int B, int T, const unsigned char *delim,
                          const int *match, int k)
{
    int n = (int)(f->a.L * f->a.H);
    HeadSums *sums = calloc((size_t)n, sizeof *sums);
    HeadStats *st = calloc((size_t)n, sizeof *st);
    heads_add_rows(sums, &f->a, delim, match, B, T);
    heads_finish(st, sums, n);
    HeadStats out = st[k];
    free(sums);
    free(st);
    return out;
}

#define T16 16

Test(heads, previous_token_pattern_scores_one)
{
    int pats[] = {PAT_PREV};
    FakeActs f;
    fake_init(&f, 1, 1, 2, T16, pats, 0);
    HeadStats s = stats_of(&f, 2, T16, NULL, NULL, 0);
    cr_assert_float_eq(s.prev, 1.0, 1e-12);
    cr_assert_float_eq(s.self, 0.0, 1e-12);
    cr_assert_float_eq(s.confidence, 1.0, 1e-12);
    cr_assert_float_eq(s.distance, 1.0, 1e-12);
    cr_assert_float_eq(s.entropy, 0.0, 1e-12);
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_PREVIOUS);
    free(f.buf);
}

Test(heads, uniform_rows_have_normalised_entropy_one)
{
    int pats[] = {PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T16, pats, 0);
    HeadStats s = stats_of(&f, 1, T16, NULL, NULL, 0);
    /* Rows 4..15 (skip = 16/4): uniform over i + 1 keys. */
    cr_assert_eq(heads_skip(T16), 4);
    double dist = 0, first = 0;
    for (int i = 4; i < T16; i++) {
        dist += i / 2.0;
        first += 1.0 / (i + 1);
    }
    cr_assert_float_eq(s.entropy, 1.0, 1e-6, "entropy %.9f", s.entropy);
    cr_assert_float_eq(s.distance, dist / 12, 1e-5);
    cr_assert_float_eq(s.first, first / 12, 1e-6);
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_BROAD);
    free(f.buf);
}

Test(heads, local3_is_the_weight_on_the_token_and_the_three_before)
{
    /* Rows 4..15 (skip = 16/4). A previous-token head keeps all its weight within
     * three tokens, a first-position head none of it (its key is 4 or more back);
     * a uniform head puts 4 of its i + 1 equal weights there. */
    int pats[] = {PAT_PREV, PAT_SINK, PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 3, 1, T16, pats, 0);
    HeadSums sums[3] = {{0}};
    HeadStats st[3];
    heads_add_rows(sums, &f.a, NULL, NULL, 1, T16);
    heads_finish(st, sums, 3);
    double want = 0.0;
    for (int i = 4; i < T16; i++)
        want += 4.0 / (i + 1);
    cr_assert_float_eq(st[0].local3, 1.0, 1e-12);
    cr_assert_float_eq(st[1].local3, 0.0, 1e-12);
    cr_assert_float_eq(st[2].local3, want / 12, 1e-6, "local3 %.9f", st[2].local3);
    free(f.buf);
}

Test(heads, first_position_sink_scores_one)
{
    int pats[] = {PAT_SINK};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T16, pats, 0);
    HeadStats s = stats_of(&f, 1, T16, NULL, NULL, 0);
    cr_assert_float_eq(s.first, 1.0, 1e-12);
    cr_assert_float_eq(s.prev, 0.0, 1e-12);
    cr_assert_float_eq(s.distance, (4 + 15) / 2.0, 1e-12);
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_SINK);
    free(f.buf);
}

Test(heads, delimiter_score_is_the_mass_on_delimiter_keys)
{
    const char *text = "ab, cd. ef gh!ij";
    unsigned char delim[T16];
    for (int t = 0; t < T16; t++)
        delim[t] = (unsigned char)heads_is_delim((unsigned char)text[t]);
    cr_assert(delim[2] && delim[3] && delim[6] && delim[10] && delim[13] && !delim[0]);
    int pats[] = {PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T16, pats, 0);
    /* A uniform head's delimiter mass equals the share of delimiter keys. */
    HeadStats s = stats_of(&f, 1, T16, delim, NULL, 0);
    double rows, share = heads_delim_share(delim, T16, &rows);
    cr_assert_float_eq(s.delim, share / rows, 1e-6);
    /* A head on the last delimiter at or before each query scores 1. */
    float *att = f.buf;
    memset(att, 0, sizeof(float) * T16 * T16);
    for (int i = 0; i < T16; i++) {
        int key = i;
        while (key > 0 && !delim[key])
            key--;
        att[i * T16 + key] = 1.0f;
    }
    s = stats_of(&f, 1, T16, delim, NULL, 0);
    cr_assert_float_eq(s.delim, 1.0, 1e-12);
    cr_assert_eq(heads_classify(&s, share / rows), HEAD_DELIMITER);
    free(f.buf);
}

Test(heads, probe_is_distinct_tokens_repeated_twice)
{
    Rng rng;
    rng_init(&rng, 7, RNG_STREAM_HEADS);
    int tokens[64], alpha[40];
    for (int v = 0; v < 40; v++)
        alpha[v] = 100 + 2 * v;   /* tokens 100, 102, ..., 178: only these may appear */
    int pool[40];
    int P = heads_probe_build(tokens, 64, alpha, 40, pool, &rng);
    cr_assert_eq(P, 32);
    for (int i = 0; i < P; i++) {
        cr_assert(tokens[i] >= 100 && tokens[i] < 180 && tokens[i] % 2 == 0, "%d", tokens[i]);
        cr_assert_eq(tokens[P + i], tokens[i]);
        for (int j = 0; j < i; j++)
            cr_assert_neq(tokens[i], tokens[j]);
    }
    cr_assert_eq(heads_probe_build(tokens, 64, alpha, 5, pool, &rng), 5,
                 "P is capped by the alphabet");
}

Test(heads, induction_and_duplicate_on_a_hand_built_probe)
{
    enum { P = 8, TP = 2 * P };
    int pats[] = {PAT_INDUCTION, PAT_DUPLICATE, PAT_PREV};
    FakeActs f;
    fake_init(&f, 1, 3, 2, TP, pats, P);
    HeadSums sums[3] = {0};
    HeadStats st[3] = {0};
    heads_add_probe(sums, &f.a, 2, P);
    heads_finish(st, sums, 3);
    cr_assert_float_eq(st[0].induction, 1.0, 1e-12);
    cr_assert_float_eq(st[0].duplicate, 0.0, 1e-12);
    cr_assert_float_eq(st[1].induction, 0.0, 1e-12);
    cr_assert_float_eq(st[1].duplicate, 1.0, 1e-12);
    /* Previous-token: query P + q attends P + q - 1, the copy's key only at q = 0. */
    cr_assert_float_eq(st[2].induction, 0.0, 1e-12);
    cr_assert_float_eq(st[2].duplicate, 0.0, 1e-12);
    st[0].prev = 0.9;   /* induction takes precedence over other patterns */
    cr_assert_eq(heads_classify(&st[0], 0.2), HEAD_INDUCTION);
    st[1].entropy = 0.1;
    st[1].distance = 8;
    cr_assert_eq(heads_classify(&st[1], 0.2), HEAD_MIXED);
    free(f.buf);
}

Test(heads, repeat_targets_point_after_the_last_earlier_bigram)
{
    /* "xabyabzab": at i = 5 ('b' after 'a') the last earlier "ab" ends at 2, so
     * the target is 3; at i = 8 it is the "ab" ending at 5, target 6. */
    const char *s = "xabyabzab";
    int tok[9], match[9];
    for (int i = 0; i < 9; i++)
        tok[i] = s[i];
    heads_repeat_targets(match, tok, 1, 9);
    int want[9] = {-1, -1, -1, -1, -1, 3, -1, -1, 6};
    for (int i = 0; i < 9; i++)
        cr_assert_eq(match[i], want[i], "match[%d] = %d, want %d", i, match[i], want[i]);
    /* "abab": the match would be i - 1, a previous-token key, so it is not used. */
    int tok2[4] = {1, 2, 1, 2}, m2[4];
    heads_repeat_targets(m2, tok2, 1, 4);
    cr_assert_eq(m2[3], -1);
}

Test(heads, jsd_is_zero_for_identical_and_ln2_for_disjoint_rows)
{
    float p[4] = {0.1f, 0.2f, 0.3f, 0.4f}, q[4] = {0.5f, 0.5f, 0, 0}, r[4] = {0, 0, 0.25f, 0.75f};
    cr_assert_eq(heads_jsd(p, p, 4), 0.0);
    cr_assert_float_eq(heads_jsd(q, r, 4), log(2.0), 1e-12);
    cr_assert_float_eq(heads_jsd(p, q, 4), heads_jsd(q, p, 4), 1e-15);
    double d = heads_jsd(p, q, 4);
    cr_assert(d > 0 && d < log(2.0));
}

Test(heads, head_jsd_matrix_and_effective_number)
{
    /* Heads 0 and 1 identical (previous-token), head 2 a sink: rows i >= 4
     * have disjoint supports {i - 1} and {0}. */
    int pats[] = {PAT_PREV, PAT_PREV, PAT_SINK};
    FakeActs f;
    fake_init(&f, 1, 3, 2, T16, pats, 0);
    char err[256];
    double jsd[9] = {0};
    cr_assert_eq(heads_add_jsd(jsd, &f.a, 2, T16, err, sizeof err), 0, "%s", err);
    double rows = 2.0 * (T16 - heads_skip(T16));
    for (int i = 0; i < 9; i++)
        jsd[i] /= rows;
    cr_assert_eq(jsd[0 * 3 + 1], 0.0);
    cr_assert_float_eq(jsd[0 * 3 + 2], log(2.0), 1e-12);
    cr_assert_float_eq(jsd[2 * 3 + 1], log(2.0), 1e-12);
    int same[2] = {0, 1}, apart[2] = {0, 2}, all[3] = {0, 1, 2};
    double e;
    cr_assert_eq(heads_effective(&e, jsd, 3, same, 2, err, sizeof err), 0);
    cr_assert_float_eq(e, 1.0, 1e-9, "identical heads count once, got %g", e);
    cr_assert_eq(heads_effective(&e, jsd, 3, apart, 2, err, sizeof err), 0);
    cr_assert_float_eq(e, 2.0, 1e-9, "disjoint heads count fully, got %g", e);
    /* Two patterns among three heads: S has eigenvalues 2, 1, 0, so the count is
     * exp(H(2/3, 1/3)) = 1.89: a pair of twins weighs more than a loner. */
    cr_assert_eq(heads_effective(&e, jsd, 3, all, 3, err, sizeof err), 0);
    double want = exp(-(2.0 / 3) * log(2.0 / 3) - (1.0 / 3) * log(1.0 / 3));
    cr_assert_float_eq(e, want, 1e-9, "got %g, want %g", e, want);
    HeadStats st[3] = {0};
    heads_redundancy(st, jsd, 1, 3);
    cr_assert_eq(st[0].nearest, 1);
    cr_assert_eq(st[0].jsd_nearest, 0.0);
    cr_assert_float_eq(st[2].jsd_layer, log(2.0), 1e-12);
    free(f.buf);
}

Test(heads, effective_number_of_many_disjoint_heads_is_their_count)
{
    enum { K = 16 };
    double jsd[K * K];
    int idx[K];
    for (int i = 0; i < K; i++) {
        idx[i] = i;
        for (int j = 0; j < K; j++)
            jsd[i * K + j] = i == j ? 0.0 : log(2.0);
    }
    double e;
    cr_assert_eq(heads_effective(&e, jsd, K, idx, K, NULL, 0), 0);
    cr_assert_float_eq(e, (double)K, 1e-9);
}

Test(heads, classification_follows_the_documented_thresholds)
{
    HeadStats s = {.entropy = 0.5, .distance = 10.0};
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_MIXED);
    s.entropy = HEADS_BROAD_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_BROAD);
    s.distance = HEADS_LOCAL_MAX;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_LOCAL);
    s.delim = 0.55;
    cr_assert_eq(heads_classify(&s, 0.3), HEAD_LOCAL, "0.55 is under 2 x a 0.3 share");
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_DELIMITER);
    s.first = HEADS_SINK_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_SINK);
    s.rel[HEADS_REL_BRACKET] = HEADS_BRACKET_MIN - 0.01;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_SINK, "0.29 on bracket openers is not enough");
    s.rel[HEADS_REL_BRACKET] = HEADS_BRACKET_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_BRACKET);
    s.prev = HEADS_PREV_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_PREVIOUS);
    s.rel[HEADS_REL_COPY] = HEADS_COPY_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_COPY);
    s.induction = HEADS_INDUCTION_MIN;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_INDUCTION);
    s.masked = 1;
    cr_assert_eq(heads_classify(&s, 0.2), HEAD_MASKED);
    cr_assert_str_eq(heads_type_names[HEAD_PREVIOUS], "previous-token");
    cr_assert_str_eq(heads_type_names[HEAD_BRACKET], "bracket");
    cr_assert_str_eq(heads_rel_table[HEADS_REL_PREV].name, "previous-token");
    cr_assert_str_eq(heads_rel_table[HEADS_REL_COPY].name, "copy");
}

/* The role rule (docs/heads.md, "Types"): a head that serves relations is named
 * for the one it attends to most; one that serves none keeps its type; attending
 * without being needed, or being needed without attending, is not serving. */
Test(heads, role_is_the_most_attended_relation_served_else_the_type)
{
    HeadStats s = {.entropy = 0.9, .distance = 10.0, .costed = 1};
    s.type = heads_classify(&s, 0.2);
    cr_assert_eq(s.type, HEAD_BROAD);
    cr_assert_eq(heads_role_relation(&s), -1);
    cr_assert_str_eq(heads_role(&s), "broad");
    s.rel[HEADS_REL_AGREE] = 0.40;   /* attends, not needed */
    cr_assert_str_eq(heads_role(&s), "broad");
    s.cost[HEADS_REL_DET] = 0.5;     /* needed, does not attend */
    cr_assert_str_eq(heads_role(&s), "broad");
    s.cost[HEADS_REL_AGREE] = HEADS_NEEDED_SHARE;
    cr_assert_eq(heads_role_relation(&s), HEADS_REL_AGREE);
    cr_assert_str_eq(heads_role(&s), "agreement", "a broad head that serves agreement");
    s.rel[HEADS_REL_DET] = 0.60;     /* serves determiner too, with more attention */
    cr_assert_str_eq(heads_role(&s), "determiner");
    s.rel[HEADS_REL_AGREE] = 0.60;   /* a tie goes to the lower relation */
    cr_assert_str_eq(heads_role(&s), "agreement");
    s.masked = 1;
    cr_assert_eq(heads_role_relation(&s), -1, "a masked head serves nothing");
}

/* The clearest serving head: the largest attention among the heads' roles, not
 * among everything a head attends to. */
Test(heads, clearest_serving_head_has_the_most_attention_on_what_it_serves)
{
    HeadStats st[4] = {{.costed = 1}, {.costed = 1}, {.costed = 1}, {.costed = 1}};
    int rel;
    cr_assert_eq(heads_clearest(st, 4, &rel), -1);
    cr_assert_eq(rel, -1);
    st[0].rel[HEADS_REL_PREV] = 0.9;            /* attends most, but is not needed */
    st[1].rel[HEADS_REL_AGREE] = 0.45;
    st[1].cost[HEADS_REL_AGREE] = 0.2;
    st[2].rel[HEADS_REL_DET] = 0.55;
    st[2].cost[HEADS_REL_DET] = 0.3;
    st[3].rel[HEADS_REL_COREF] = 0.55;          /* ties head 2: the lower head wins */
    st[3].cost[HEADS_REL_COREF] = 0.9;
    cr_assert_eq(heads_clearest(st, 4, &rel), 2);
    cr_assert_eq(rel, HEADS_REL_DET);
    st[2].masked = 1;
    cr_assert_eq(heads_clearest(st, 4, &rel), 3);
    cr_assert_eq(rel, HEADS_REL_COREF);
}

/* The relation table holds together: names are unique, the text relations (found
 * in any text) come before the planted ones, a planted relation's keys come from
 * its planted kind, and every planted kind is measured as exactly one relation. */
Test(heads, relation_rows_are_consistent_with_their_kind)
{
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelRow *r = &heads_rel_table[q];
        cr_assert_not_null(r->name, "relation %d has no name", q);
        for (int p = 0; p < q; p++)
            cr_assert_str_neq(heads_rel_table[p].name, r->name, "%s twice", r->name);
        cr_assert_eq(r->planted, q >= HEADS_REL_TEXT, "%s: planted %d", r->name, r->planted);
        cr_assert_eq(r->key == HEADS_KEY_PLANTED, r->planted, "%s: key rule %d", r->name, r->key);
        if (r->planted)
            cr_assert_geq(r->synth, 0, "%s: planted without a planted kind", r->name);
        if (r->synth >= 0)
            cr_assert_eq(heads_rel_of_synth(r->synth), q, "%s", r->name);
    }
    for (int k = 0; k < SYNTH_REL_KINDS; k++)
        cr_assert_geq(heads_rel_of_synth(k), 0, "planted kind %d is measured as no relation", k);
    cr_assert_eq(heads_rel_of_synth(SYNTH_REL_KINDS), -1);
    cr_assert_eq(heads_rel_of_synth(SYNTH_REL_BRACKET), HEADS_REL_BRACKET);
    cr_assert_eq(heads_rel_of_synth(SYNTH_REL_PRONOUN), HEADS_REL_PRONOUN);
    /* repeat: the two relations whose token comes again */
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        cr_assert_eq(heads_rel_table[q].repeat, q == HEADS_REL_COPY || q == HEADS_REL_NAMES,
                     "%s", heads_rel_table[q].name);
}

/* Every relation has its sentence for a reader, naming its query and its key. */
Test(heads, every_relation_says_which_token_is_query_and_which_key)
{
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelRow *r = &heads_rel_table[q];
        cr_assert_not_null(r->about, "%s has no sentence", r->name);
        cr_assert_not_null(strstr(r->about, "Query: "), "%s", r->name);
        cr_assert_not_null(strstr(r->about, "Key"), "%s", r->name);
    }
}

/* A byte-level tokenizer of all 256 bytes: token b is byte b. */
static void all_bytes(Tokenizer *tok)
{
    unsigned char b[256];
    for (int c = 0; c < 256; c++)
        b[c] = (unsigned char)c;
    cr_assert_eq(tok_build(tok, b, 256, NULL, 0), 0);
}

/* The bytes of text[0..T) as byte-level token ids. */
static void byte_ids(int *ids, const char *text, int T)
{
    for (int t = 0; t < T; t++)
        ids[t] = (unsigned char)text[t];
}

/* The bytes of a C string as one window of byte-level tokens. */
static void keys_of(int kind, const char *text, int *key, int *first)
{
    int T = (int)strlen(text), ids[64];
    cr_assert(T <= 64);
    byte_ids(ids, text, T);
    Tokenizer tok;
    all_bytes(&tok);
    if (kind == HEADS_REL_BRACKET)
        heads_keys_bracket(key, ids, &tok, 1, T);
    else
        heads_keys_copy(key, first, ids, 1, T);
    tok_free(&tok);
}

Test(heads, bracket_keys_point_from_before_the_closer_to_its_opener)
{
    /* 01234567890123456 */
    const char *s = "a(b\"cd\")e)\n\"x(y]z";
    int key[17], want[17];
    cr_assert_eq(strlen(s), 17u);
    keys_of(HEADS_REL_BRACKET, s, key, NULL);
    for (int i = 0; i < 17; i++)
        want[i] = -1;
    want[5] = 3;    /* the '"' at 6 closes the '"' at 3 */
    want[6] = 1;    /* the ')' at 7 closes the '(' at 1 */
    /* The ')' at 9 has nothing open (ignored); the newline at 10 empties the stack;
     * the ']' at 15 does not match the '(' at 13 on top, so it closes nothing. */
    for (int i = 0; i < 17; i++)
        cr_assert_eq(key[i], want[i], "key[%d] = %d, want %d", i, key[i], want[i]);
    /* A quote left open on one line does not pair with one on the next. */
    const char *t = "\"ab\ncd\"e";
    int k2[8];
    keys_of(HEADS_REL_BRACKET, t, k2, NULL);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(k2[i], -1, "key[%d] = %d", i, k2[i]);
}

Test(heads, copy_keys_need_three_shared_bytes_and_the_same_next_byte)
{
    /* 0123456789012345 */
    const char *s = "xabcdyabcdzabcex";
    int key[16], first[16];
    keys_of(HEADS_REL_COPY, s, key, first);
    /* Row 8: "abc" ended at 3 before, followed by 'd' both times: key 4, first row 3.
     * Row 9: "bcd" ended at 4, followed by 'y' there and 'z' here: no row. Row 13:
     * "abc" last ended at 8, followed by 'd', but 'e' comes next: no row. */
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(key[i], i == 8 ? 4 : -1, "key[%d] = %d", i, key[i]);
        cr_assert_eq(first[i], i == 8 ? 3 : -1, "first[%d] = %d", i, first[i]);
    }
    /* Three repeats: the key is after the last earlier one, the first row the first. */
    const char *t = "qabcd.abcd.abcd";
    int k3[15], f3[15];
    keys_of(HEADS_REL_COPY, t, k3, f3);
    cr_assert_eq(k3[13], 9, "after the most recent 'abc' (ending at 8)");
    cr_assert_eq(f3[13], 3, "its first occurrence ends at 3");
    /* A period-2 string: every next byte is the byte before the query, which a
     * previous-token head predicts, so none is a copy row. */
    const char *u = "babababa";
    int k4[8], f4[8];
    keys_of(HEADS_REL_COPY, u, k4, f4);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(k4[i], -1, "key[%d] = %d", i, k4[i]);
    /* The same with a third letter: "abcXabcY" style rows still count. */
    const char *v = "bacbacbac";
    int k5[9], f5[9];
    keys_of(HEADS_REL_COPY, v, k5, f5);
    cr_assert_eq(k5[5], 3, "\"bac\" ending at 5 ended at 2, followed by 'b' both times");
    cr_assert_eq(f5[5], 2);
    cr_assert_eq(k5[6], 4, "\"acb\" ending at 6 ended at 3");
    cr_assert_eq(k5[7], 5, "\"cba\" ending at 7: the last earlier one ends at 4");
    cr_assert_eq(f5[7], 4);
}

Test(heads, relation_attention_uniform_and_loss_on_hand_built_heads)
{
    /* One window of T = 16: "ab(cdef)gh(ijk)l". Skip = 4 rows. Bracket rows:
     * i = 6 (before ')' at 7) -> key 2, and i = 13 (before ')' at 14) -> key 10. */
    enum { T = 16 };
    const char *s = "ab(cdef)gh(ijk)l";
    int key[T];
    keys_of(HEADS_REL_BRACKET, s, key, NULL);
    cr_assert_eq(key[6], 2);
    cr_assert_eq(key[13], 10);
    /* Head 0 attends to the open bracket at rows 6 and 13 with weight 0.5 and 1; head 1
     * is uniform; head 2 is a previous-token head. */
    int pats[] = {PAT_SELF, PAT_UNIFORM, PAT_PREV};
    FakeActs f;
    fake_init(&f, 1, 3, 1, T, pats, 0);
    float *att0 = (float *)heads_att(&f.a, 0, 0, 0, T);
    att0[6 * T + 6] = 0.5f;
    att0[6 * T + 2] = 0.5f;
    att0[13 * T + 13] = 0.0f;
    att0[13 * T + 10] = 1.0f;
    float losses[T];
    for (int i = 0; i < T; i++)
        losses[i] = 0.25f * (float)i;
    HeadSums sums[3] = {0};
    HeadStats st[3] = {0};
    RelationSums rs = {0};
    heads_add_relation(sums, &rs, HEADS_REL_BRACKET, &f.a, key, NULL, losses, 1, T);
    heads_finish(st, sums, 3);
    HeadsRelation r;
    heads_relation_finish(&r, st, &rs, HEADS_REL_BRACKET, 3);
    cr_assert_eq(r.best, 0);
    cr_assert_float_eq(r.attention, (0.5 + 1.0) / 2, 1e-7);
    cr_assert_float_eq(st[1].rel[HEADS_REL_BRACKET], (1.0 / 7 + 1.0 / 14) / 2, 1e-7);
    cr_assert_float_eq(r.uniform, (1.0 / 7 + 1.0 / 14) / 2, 1e-12, "uniform head's score");
    cr_assert_float_eq(st[2].rel[HEADS_REL_BRACKET], 0.0, 1e-12);
    cr_assert_float_eq(r.loss, (0.25 * 6 + 0.25 * 13) / 2, 1e-7);
    cr_assert_float_eq(r.rows, 2.0, 1e-12);
    cr_assert_float_eq(r.loss_ratio, 0.0, 1e-12, "no first occurrences given");
    /* Masking head 0 makes the uniform head the best. */
    st[0].masked = 1;
    heads_relation_finish(&r, st, &rs, HEADS_REL_BRACKET, 3);
    cr_assert_eq(r.best, 1);
    free(f.buf);
}

Test(heads, copy_loss_ratio_pairs_each_copy_row_with_its_first_occurrence)
{
    /* 0123456789012345: copy rows at 8 (first 3) and 13 (first 3, key 9). */
    enum { T = 16 };
    const char *s = "xabcd.abcd.abcd!";
    int key[T], first[T];
    keys_of(HEADS_REL_COPY, s, key, first);
    cr_assert_eq(key[8], 4);
    cr_assert_eq(first[8], 3);
    cr_assert_eq(key[13], 9);
    cr_assert_eq(first[13], 3);
    int rows = 0;
    for (int i = 0; i < T; i++)
        rows += key[i] >= 0;
    /* Row 9 ("bcd", next '.') matches "bcd" ending at 4 (next '.'): a copy row; row 14
     * ("bcd", next '!') does not (the last "bcd" ended at 9, followed by '.'). */
    cr_assert_eq(key[9], 5);
    cr_assert_eq(first[9], 4);
    cr_assert_eq(key[14], -1);
    float losses[T];
    for (int i = 0; i < T; i++)
        losses[i] = 1.0f + (float)i;   /* loss at row i = i + 1 */
    int pats[] = {PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 1, 1, T, pats, 0);
    HeadSums sums[1] = {0};
    HeadStats st[1] = {0};
    RelationSums rs = {0};
    heads_add_relation(sums, &rs, HEADS_REL_COPY, &f.a, key, first, losses, 1, T);
    heads_finish(st, sums, 1);
    HeadsRelation r;
    heads_relation_finish(&r, st, &rs, HEADS_REL_COPY, 1);
    /* Scored rows (>= skip 4) with a key: every copy row; they all pair. */
    double want_loss = 0, want_first = 0, want_uni = 0;
    int n = 0;
    for (int i = 4; i < T; i++)
        if (key[i] >= 0) {
            want_loss += i + 1;
            want_first += first[i] + 1;
            want_uni += 1.0 / (i + 1);
            n++;
        }
    cr_assert_eq(n, rows, "every copy row is past the skipped rows here");
    cr_assert_float_eq(r.loss, want_loss / n, 1e-6);
    cr_assert_float_eq(r.first_loss, want_first / n, 1e-6);
    cr_assert_float_eq(r.loss_ratio, want_loss / want_first, 1e-6);
    cr_assert_float_eq(r.uniform, want_uni / n, 1e-9);
    cr_assert_float_eq(r.attention, want_uni / n, 1e-6, "a uniform head scores the baseline");
    free(f.buf);
}

/* s encoded by tok into ids (room for strlen(s)); returns the count. */
static int tok_encode_ints(const Tokenizer *tok, const char *s, int *ids)
{
    size_t n = strlen(s);
    TokenId buf[256];
    cr_assert(n <= 256);
    long got = tok_encode(tok, (const unsigned char *)s, n, buf, "test", NULL, 0);
    cr_assert(got >= 0, "\"%s\" is outside the vocabulary", s);
    for (long i = 0; i < got; i++)
        ids[i] = buf[i];
    return (int)got;
}

Test(heads, probe_alphabet_is_copied_letters_then_letters_never_newline)
{
    Tokenizer tok;
    const char *all = "\n .,abcdefghijklmnopqrstuvwxyzXYZ!";
    cr_assert_eq(tok_build(&tok, (const unsigned char *)all, strlen(all), NULL, 0), 0);
    int alpha[256], rule, ids[32];
    /* Copy rows predict the letters d..l (9 letters) of the repeat. */
    const char *s = "\nabcdefghijkl,abcdefghijkl.";
    int T = (int)strlen(s), key[32], first[32];
    cr_assert_eq(tok_encode_ints(&tok, s, ids), T);
    heads_keys_copy(key, first, ids, 1, T);
    int n = heads_probe_alphabet(alpha, &rule, ids, key, 1, T, &tok);
    cr_assert_eq(rule, 1);
    cr_assert_eq(n, 9, "%d letters", n);
    for (int k = 0; k < n; k++) {
        unsigned char c = tok.bytes[alpha[k]];
        cr_assert(c >= 'd' && c <= 'l', "'%c' is not a copied letter", c);
    }
    /* Too few copied letters: every letter of the text, still no newline or space. */
    const char *t = "\nabcdefgh\nabcdefgX!";
    T = tok_encode_ints(&tok, t, ids);
    heads_keys_copy(key, first, ids, 1, T);
    n = heads_probe_alphabet(alpha, &rule, ids, key, 1, T, &tok);
    cr_assert_eq(rule, 2);
    cr_assert_eq(n, 9, "a-h and X");
    /* Too few letters: every byte of the text but the newline. */
    const char *u = "\nab, .!\nab, .!";
    T = tok_encode_ints(&tok, u, ids);
    heads_keys_copy(key, first, ids, 1, T);
    n = heads_probe_alphabet(alpha, &rule, ids, key, 1, T, &tok);
    cr_assert_eq(rule, 4, "6 bytes are still too few: every token but the newline");
    cr_assert_eq(n, tok.V - 1);
    for (int k = 0; k < n; k++)
        cr_assert_neq(tok.bytes[alpha[k]], '\n');
    tok_free(&tok);
}

/* What ./train --heads-every measures (app/train/train_loop.c): the rows and the
 * text relations of B windows whose forward already filled f, with the rare
 * relation ranked by the windows' own counts. */
static void measure_batch(HeadsMeasured *hm, FakeActs *f, const int *tokens, const Tokenizer *tok,
                          int B, int T)
{
    HeadsWindows w;
    cr_assert_eq(heads_windows_batch(&w, tokens, B, T, NULL, 0), 0);
    cr_assert_eq(heads_measure_init(hm, (int)f->a.L, (int)f->a.H, 0, 0, NULL, 0), 0);
    HeadsMeasureIn in = {.what = HEADS_ROWS | HEADS_WINDOW_RELATIONS, .tok = tok, .w = &w,
                         .filled = 1, .window_relations = HEADS_REL_TEXT};
    cr_assert_eq(heads_measure(hm, &in, &f->a, NULL, 0), 0);
    heads_windows_free(&w);
}

Test(heads, quick_relations_match_the_full_measurement)
{
    /* Two windows, a previous-token head and a uniform head: the logged numbers are
     * the finished relation of the same sums. */
    enum { T = 16 };
    const char *s = "ab(cdef)gh(ijk)lq(rs)tu\"vw\"xyzab";
    int tokens[2 * T];
    Tokenizer tok;
    all_bytes(&tok);
    byte_ids(tokens, s, 2 * T);
    int pats[] = {PAT_PREV, PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 2, 2, T, pats, 0);
    HeadsMeasured hm;
    measure_batch(&hm, &f, tokens, &tok, 2, T);
    const HeadsRelation *rel = hm.rel;
    cr_assert_eq(rel[HEADS_REL_PREV].best, 0);
    cr_assert_float_eq(rel[HEADS_REL_PREV].attention, 1.0, 1e-12);
    cr_assert_eq(rel[HEADS_REL_BRACKET].best, 1, "the uniform head beats attention 0");
    /* Window 0: rows 6 -> 2 and 13 -> 10; window 1 ("q(rs)tu\"vw\"xyzab"): row 3 -> 1
     * is before the skip (4), row 9 -> 7 ('"' at 10 closes the '"' at 7). */
    double want = (1.0 / 7 + 1.0 / 14 + 1.0 / 10) / 3;
    cr_assert_float_eq(rel[HEADS_REL_BRACKET].uniform, want, 1e-12);
    cr_assert_float_eq(rel[HEADS_REL_BRACKET].attention, want, 1e-6);
    cr_assert_float_eq(rel[HEADS_REL_BRACKET].rows, 3.0, 1e-12);
    /* Rare (counts of the batch itself): every scored row has a key set, which
     * never holds i - 1, so the uniform head is the best and scores uniform. */
    cr_assert_float_eq(rel[HEADS_REL_RARE].rows, 2.0 * (T - 4), 1e-12);
    cr_assert_eq(rel[HEADS_REL_RARE].best, 1);
    cr_assert_float_eq(rel[HEADS_REL_RARE].attention, rel[HEADS_REL_RARE].uniform, 1e-6);
    heads_measure_free(&hm);
    tok_free(&tok);
    free(f.buf);
}

Test(heads, quick_metrics_for_training_logs)
{
    int pats[] = {PAT_PREV, PAT_SINK};
    FakeActs f;
    fake_init(&f, 1, 2, 1, T16, pats, 0);
    int tokens[T16];
    for (int t = 0; t < T16; t++)
        tokens[t] = t % 5;
    Tokenizer tok;
    all_bytes(&tok);
    HeadsMeasured hm;
    measure_batch(&hm, &f, tokens, &tok, 1, T16);
    cr_assert_float_eq(hm.st[0].prev, 1.0, 1e-6);
    cr_assert_float_eq(hm.st[0].distance, 1.0, 1e-6);
    cr_assert_float_eq(hm.st[1].first, 1.0, 1e-6);
    cr_assert_float_eq(hm.st[1].entropy, 0.0, 1e-6);
    /* The log's keys, in their rows' order. */
    const char *logged[] = {"entropy", "prev", "first", "distance", "repeat"};
    for (int place = 1; place <= 5; place++) {
        int m = heads_metric_at(offsetof(HeadsMetricRow, log), place);
        cr_assert(m >= 0);
        cr_assert_str_eq(heads_metric_table[m].name, logged[place - 1]);
    }
    cr_assert_eq(heads_metric_at(offsetof(HeadsMetricRow, log), 6), -1);
    heads_measure_free(&hm);
    tok_free(&tok);
    free(f.buf);
}

Test(heads, statistics_are_identical_for_one_and_two_threads)
{
    enum { L = 2, H = 3, B = 2, T = 24 };
    FakeActs f;
    int pats[L * H] = {0};
    fake_init(&f, L, H, B, T, pats, 0);
    Rng rng;
    rng_init(&rng, 3, 0);
    /* Random causal rows. */
    for (size_t r = 0; r < (size_t)L * B * H * T; r++) {
        int i = (int)(r % T);
        float *row = f.buf + r * T, s = 0;
        for (int j = 0; j <= i; j++)
            s += row[j] = rng_uniform(&rng) + 1e-3f;
        for (int j = 0; j <= i; j++)
            row[j] /= s;
    }
    double jsd1[L * H * L * H] = {0}, jsd2[L * H * L * H] = {0};
    HeadSums s1[L * H] = {0}, s2[L * H] = {0};
    omp_set_num_threads(1);
    heads_add_rows(s1, &f.a, NULL, NULL, B, T);
    heads_add_jsd(jsd1, &f.a, B, T, NULL, 0);
    omp_set_num_threads(2);
    heads_add_rows(s2, &f.a, NULL, NULL, B, T);
    heads_add_jsd(jsd2, &f.a, B, T, NULL, 0);
    cr_assert(memcmp(s1, s2, sizeof s1) == 0);
    cr_assert(memcmp(jsd1, jsd2, sizeof jsd1) == 0);
    free(f.buf);
}

/* A byte-pair vocabulary worked by hand. Bytes (ids): ' ' 0, '"' 1, '(' 2, ')' 3,
 * '.' 4, 'a' 5, 'b' 6, 'c' 7. Merges: 8 ")." , 9 "(\"", 10 "ab", 11 " ab",
 * 12 "\")", 13 "()". With merges = 0, the byte-level vocabulary of the same bytes. */
static void hand_bpe(Tokenizer *tok, int merges)
{
    static const unsigned char bytes[8] = {' ', '"', '(', ')', '.', 'a', 'b', 'c'};
    static const BpeMerge m[6] = {{3, 4}, {2, 1}, {5, 6}, {0, 10}, {1, 3}, {2, 3}};
    char err[300];
    cr_assert_eq(tok_from_parts(tok, bytes, 8, m, merges ? 6 : 0, err, sizeof err), 0, "%s", err);
}

Test(heads, bracket_keys_on_byte_pair_tokens_go_from_before_the_closer_token_to_the_opener_token)
{
    Tokenizer bpe, byte;
    hand_bpe(&bpe, 1);
    hand_bpe(&byte, 0);
    /* Tokens: 0 c | 1 (" | 2 ab | 3 ") | 4 " ab" | 5 (" | 6 ). | 7 c | 8 () */
    const char *s = "c(\"ab\") ab(\").c()";
    int ids[32], key[32];
    int T = tok_encode_ints(&bpe, s, ids);
    int want_ids[9] = {7, 9, 10, 12, 11, 9, 8, 7, 13};
    cr_assert_eq(T, 9);
    for (int t = 0; t < T; t++)
        cr_assert_eq(ids[t], want_ids[t], "token %d is %d, want %d", t, ids[t], want_ids[t]);
    heads_keys_bracket(key, ids, &bpe, 1, T);
    /* Token 3 closes the '"' then the '(' of token 1: its first closer makes the row
     * 2 -> 1. In token 6 the ')' meets the '"' of token 5 on top: no match. Token
     * 8 opens and closes its own bracket: no row. */
    for (int t = 0; t < T; t++)
        cr_assert_eq(key[t], t == 2 ? 1 : -1, "bpe key[%d] = %d", t, key[t]);
    /* The same text byte by byte: rows before each closer, "()" keyed on itself. */
    T = tok_encode_ints(&byte, s, ids);
    cr_assert_eq(T, 17);
    heads_keys_bracket(key, ids, &byte, 1, T);
    for (int t = 0; t < T; t++) {
        int want = t == 4 ? 2 : t == 5 ? 1 : t == 15 ? 15 : -1;
        cr_assert_eq(key[t], want, "byte key[%d] = %d, want %d", t, key[t], want);
    }
    tok_free(&bpe);
    tok_free(&byte);
}

Test(heads, copy_keys_on_byte_pair_tokens_match_token_trigrams)
{
    Tokenizer bpe, byte;
    hand_bpe(&bpe, 1);
    hand_bpe(&byte, 0);
    /* Tokens: c " ab" " ab" ). c " ab" " ab" ). -- ids 7 11 11 8 7 11 11 8. Row 6
     * ends (c, " ab", " ab"), seen ending at 2 and followed by ")." both times. */
    const char *s = "c ab ab).c ab ab).";
    int ids[32], key[32], first[32];
    int T = tok_encode_ints(&bpe, s, ids);
    cr_assert_eq(T, 8);
    heads_keys_copy(key, first, ids, 1, T);
    for (int t = 0; t < T; t++) {
        cr_assert_eq(key[t], t == 6 ? 3 : -1, "bpe key[%d] = %d", t, key[t]);
        cr_assert_eq(first[t], t == 6 ? 2 : -1, "bpe first[%d] = %d", t, first[t]);
    }
    /* Byte by byte (3 bytes of context): rows 11 ("c a" -> 'b'), 13 ("ab " -> 'a'),
     * 14 ("b a" -> 'b') and 16 ("ab)" -> '.'); row 12 and 15 see " ab" last
     * followed by ')' or ' ', not what comes next. */
    T = tok_encode_ints(&byte, s, ids);
    heads_keys_copy(key, first, ids, 1, T);
    int want_key[18], want_first[18];
    for (int t = 0; t < 18; t++)
        want_key[t] = want_first[t] = -1;
    want_key[11] = 3, want_first[11] = 2;
    want_key[13] = 5, want_first[13] = 4;
    want_key[14] = 6, want_first[14] = 5;
    want_key[16] = 8, want_first[16] = 7;
    for (int t = 0; t < T; t++) {
        cr_assert_eq(key[t], want_key[t], "byte key[%d] = %d, want %d", t, key[t], want_key[t]);
        cr_assert_eq(first[t], want_first[t], "byte first[%d] = %d", t, first[t]);
    }
    tok_free(&bpe);
    tok_free(&byte);
}

Test(heads, a_token_is_a_delimiter_when_all_its_bytes_are)
{
    Tokenizer bpe;
    hand_bpe(&bpe, 1);
    cr_assert(heads_token_is_delim(&bpe, 0), "' '");
    cr_assert(heads_token_is_delim(&bpe, 8), "\").\"");
    cr_assert(heads_token_is_delim(&bpe, 9), "'(\"'");
    cr_assert(!heads_token_is_delim(&bpe, 11), "\" ab\"");
    cr_assert(!heads_token_is_delim(&bpe, 7), "'c'");
    tok_free(&bpe);
}

Test(heads, probe_alphabet_of_a_byte_pair_vocabulary_is_copied_word_tokens)
{
    /* Bytes ' ' (0), a..l (1..12); merge k joins ' ' and letter k: token 13 + k is
     * " a" + k. "a b c ... l" twice: the second copy's rows from " d" on end three
     * tokens seen before, so they predict " e" .. " l" (ids 17..24). */
    unsigned char bytes[13] = {' '};
    BpeMerge m[12];
    for (int k = 0; k < 12; k++) {
        bytes[1 + k] = (unsigned char)('a' + k);
        m[k] = (BpeMerge){0, (TokenId)(1 + k)};
    }
    Tokenizer tok;
    char err[300];
    cr_assert_eq(tok_from_parts(&tok, bytes, 13, m, 12, err, sizeof err), 0, "%s", err);
    const char *s = "a b c d e f g h i j k l a b c d e f g h i j k l";
    int ids[64], key[64], first[64], alpha[25], rule;
    int T = tok_encode_ints(&tok, s, ids);
    cr_assert_eq(T, 24);
    cr_assert(ids[0] == 1 && ids[1] == 14 && ids[12] == 13 && ids[23] == 24);
    heads_keys_copy(key, first, ids, 1, T);
    int n = heads_probe_alphabet(alpha, &rule, ids, key, 1, T, &tok);
    cr_assert_eq(rule, 1);
    cr_assert_eq(n, 8);
    for (int k = 0; k < n; k++)
        cr_assert_eq(alpha[k], 17 + k, "alpha[%d] = %d", k, alpha[k]);
    /* Half the text has no copy rows: every word token of it ("a", " b" .. " l"). */
    n = heads_probe_alphabet(alpha, &rule, ids, key, 1, 12, &tok);
    cr_assert_eq(rule, 2);
    cr_assert_eq(n, 12);
    cr_assert(alpha[0] == 1 && alpha[1] == 14 && alpha[11] == 24);
    tok_free(&tok);
}

Test(heads, planted_relations_move_to_the_tokens_that_hold_their_bytes)
{
    /* Byte level: token t is byte t, so relations only shift by the file's start. */
    size_t start1[11];
    for (int t = 0; t <= 10; t++)
        start1[t] = (size_t)t;
    const SynthRelation rel[] = {
        REL(AGREE, 105, 101), REL(BRACKET, 106, 102), REL(NAMES, 108, 103),
        REL(NAMES, 108, 99) /* key before the file */, REL(AGREE, 109, 104)
        /* predicts byte 110, past the file */,
    };
    SynthRelation out[8];
    size_t dropped = 9;
    size_t n = heads_planted_to_tokens(out, &dropped, rel, 5, 100, start1, 10);
    cr_assert_eq(n, 2);
    cr_assert_eq(dropped, 0u);
    cr_assert(out[0].kind == SYNTH_REL_AGREE && out[0].query == 5 && out[0].key == 1);
    cr_assert(out[1].kind == SYNTH_REL_NAMES && out[1].query == 8 && out[1].key == 3);
    /* Byte pairs: "The cat sits. The cat sat." as The | " cat" | " sits" | . |
     * " The" | " cat" | " sat" | . (tokens 0..7, starting at the bytes below). */
    const size_t start2[9] = {0, 3, 7, 12, 13, 17, 21, 25, 26};
    const SynthRelation rel2[] = {
        /* The 't' of "sits" predicts 's', inside " sits": the row before " sits" is
         * " cat", the subject itself -- dropped. */
        REL(AGREE, 10, 6),
        /* The last 's' of "sits" predicts '.': row 2 (" sits"), key " cat" (1). */
        REL(AGREE, 11, 6),
        /* Letters of the second "cat" predict letters inside " cat" (token 5): row 4
         * (" The"), key the first " cat". */
        REL(NAMES, 18, 5), REL(NAMES, 19, 6),
        /* A query whose next byte is in the first token has no row before it. */
        REL(AGREE, 0, 0),
    };
    n = heads_planted_to_tokens(out, &dropped, rel2, 5, 0, start2, 8);
    cr_assert_eq(n, 3);
    cr_assert_eq(dropped, 2u);
    cr_assert(out[0].kind == SYNTH_REL_AGREE && out[0].query == 2 && out[0].key == 1);
    cr_assert(out[1].kind == SYNTH_REL_NAMES && out[1].query == 4 && out[1].key == 1);
    cr_assert(out[2].kind == SYNTH_REL_NAMES && out[2].query == 4 && out[2].key == 1);
}

Test(heads, determiner_and_coreference_move_to_word_tokens)
{
    /* "Two old dogs ran. The dog was near the cup because it was hungry, so the dog
     * slept." The determiner relation: the 'g' of "dogs" (byte 10, where dog/dogs
     * part) needs "Two" (key: its 'o', byte 2). The coreference relation: the
     * space before the last "dog" (byte 72) predicts its 'd', whose antecedent
     * starts at byte 22. */
    const char *text = "Two old dogs ran. The dog was near the cup because it was hungry, "
                       "so the dog slept.";
    cr_assert_eq(text[10], 'g');
    cr_assert_eq(text[2], 'o');
    cr_assert_eq(strncmp(text + 66, "so the dog", 10), 0);
    cr_assert_eq(text[22], 'd');
    const SynthRelation rel[] = {REL(DET, 10, 2), REL(COREF, 72, 22)};
    size_t nb = strlen(text), dropped = 9;
    /* Bytes: unchanged. */
    size_t *start1 = malloc((nb + 1) * sizeof *start1);
    cr_assert_not_null(start1);
    for (size_t t = 0; t <= nb; t++)
        start1[t] = t;
    SynthRelation out[4];
    cr_assert_eq(heads_planted_to_tokens(out, &dropped, rel, 2, 0, start1, nb), 2u);
    cr_assert_eq(dropped, 0u);
    cr_assert(out[0].kind == SYNTH_REL_DET && out[0].query == 10 && out[0].key == 2);
    cr_assert(out[1].kind == SYNTH_REL_COREF && out[1].query == 72 && out[1].key == 22);
    free(start1);
    /* One token per word, with its space: Two | " old" | " dogs" | " ran" | "." |
     * " The" | " dog" | " was" | " near" | " the" | " cup" | " because" | " it" |
     * " was" | " hungry" | "," | " so" | " the" | " dog" | " slept" | "." */
    const size_t start2[] = {0,  3,  7,  12, 16, 17, 21, 25, 29, 34, 38,
                             42, 50, 53, 57, 64, 65, 68, 72, 76, 82, 83};
    cr_assert_eq(start2[21], nb);
    cr_assert_eq(heads_planted_to_tokens(out, &dropped, rel, 2, 0, start2, 21), 2u);
    /* Row " old" (1) predicts " dogs" and needs "Two" (0); row " the" (17)
     * predicts " dog" and needs the first " dog" (6), not the nearer " cup" (10). */
    cr_assert(out[0].kind == SYNTH_REL_DET && out[0].query == 1 && out[0].key == 0);
    cr_assert(out[1].kind == SYNTH_REL_COREF && out[1].query == 17 && out[1].key == 6);
    /* Without the adjective the determiner is the row itself: dropped. */
    const size_t start3[] = {0, 3, 8, 12, 13};
    const SynthRelation det[] = {REL(DET, 6, 2)}; /* "Two dogs ran." */
    cr_assert_eq(heads_planted_to_tokens(out, &dropped, det, 1, 0, start3, 4), 0u);
    cr_assert_eq(dropped, 1u);
}

/* A token that holds both the query byte and the start of the word the key decides
 * has chosen that word: " cat" (not " cats"), " run" (not " runs"), though the byte
 * after the query is the next token's space. Its row is the token before it. */
Test(heads, a_singular_noun_or_plural_verb_is_predicted_by_the_token_before_it)
{
    /* "The old cat sat. The dogs often run home." as The | " old" | " cat" | " sat" |
     * "." | " The" | " dogs" | " often" | " run" | " home" | "." (tokens 0..10). */
    const char *text = "The old cat sat. The dogs often run home.";
    const size_t start[] = {0, 3, 7, 11, 15, 16, 20, 25, 31, 35, 40, 41};
    cr_assert_eq(strlen(text), start[11]);
    cr_assert(text[10] == 't' && text[8] == 'c' && text[34] == 'n' && text[32] == 'r');
    SynthRelation rel[3] = {
        /* determiner: the 't' of "cat" (where cat/cats part) needs "The"; the form,
         * the noun, starts at byte 8 */
        {.kind = SYNTH_REL_DET, .query = 10, .key = 2, .form = 8, .form_len = 3},
        /* agreement: the 'n' of "run" (where run/runs part) needs "dogs"; the form,
         * the verb, starts at byte 32 */
        {.kind = SYNTH_REL_AGREE, .query = 34, .key = 24, .form = 32, .form_len = 3},
        /* the same without a form: the row before the token holding byte 35 */
        {.kind = SYNTH_REL_AGREE, .query = 34, .key = 24},
    };
    SynthRelation out[3];
    size_t dropped = 9;
    cr_assert_eq(heads_planted_to_tokens(out, &dropped, rel, 3, 0, start, 11), 3u);
    cr_assert_eq(dropped, 0u);
    cr_assert(out[0].query == 1 && out[0].key == 0, "determiner row %zu key %zu", out[0].query,
              out[0].key);
    cr_assert(out[1].query == 7 && out[1].key == 6, "agreement row %zu key %zu", out[1].query,
              out[1].key);
    cr_assert(out[2].query == 8 && out[2].key == 6);
}

Test(heads, quick_relations_read_byte_pair_tokens)
{
    /* One window of the hand vocabulary, T = 16 tokens: the bracket row 2 -> 1 is
     * before the skip (4), so a second pair of brackets gives the row 10 -> 9. */
    enum { T = 16 };
    Tokenizer bpe;
    hand_bpe(&bpe, 1);
    const char *s = "c(\"ab\") ab ab ab ab ab(\"ab\") ab ab ab ab";
    int ids[64];
    cr_assert_eq(tok_encode_ints(&bpe, s, ids), T);
    cr_assert(ids[9] == 9 && ids[11] == 12, "(\" at 9 and \") at 11");
    int pats[] = {PAT_PREV, PAT_UNIFORM};
    FakeActs f;
    fake_init(&f, 1, 2, 1, T, pats, 0);
    HeadsMeasured hm;
    measure_batch(&hm, &f, ids, &bpe, 1, T);
    const HeadsRelation *rel = hm.rel;
    cr_assert_float_eq(rel[HEADS_REL_BRACKET].rows, 1.0, 1e-12);
    cr_assert_float_eq(rel[HEADS_REL_BRACKET].uniform, 1.0 / 11, 1e-12);
    cr_assert_eq(rel[HEADS_REL_BRACKET].best, 0, "from row 10 the previous-token head looks at "
                 "9, the opener's token");
    cr_assert_float_eq(rel[HEADS_REL_BRACKET].attention, 1.0, 1e-12);
    heads_measure_free(&hm);
    tok_free(&bpe);
    free(f.buf);
}
