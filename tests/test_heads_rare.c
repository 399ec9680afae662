/* The rare relation (analysis/heads.h, docs/heads.md "Relations"): unigram
 * counts, the key sets R(i) of the window's rarest tokens, the attention on them
 * and the uniform baseline, on hand-built attention at byte level and on a
 * hand-built byte-pair tokenizer; and where ./infer --heads takes the counts
 * from (app/infer/rare_counts.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heads.h"
#include "app/infer/rare_counts.h"
#include "data/corpus.h"
#include "data/tokenizer.h"
#include "tests/testutil.h"

enum { UNIFORM, SINK, SELF };

/* Activations holding one window of H heads over T positions. */
typedef struct {
    Activations a;
    float *buf;
} Acts;

static void acts_fake(Acts *f, int H, int T, const int *pats)
{
    memset(f, 0, sizeof *f);
    f->buf = calloc((size_t)H * T * T, sizeof(float));
    cr_assert_not_null(f->buf);
    f->a.L = 1;
    f->a.H = (size_t)H;
    f->a.B = 1;
    f->a.T = T;
    f->a.att = f->buf;
    for (int h = 0; h < H; h++) {
        float *att = (float *)heads_att(&f->a, 0, 0, h, T);
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++)
                att[(size_t)i * T + j] = pats[h] == UNIFORM ? 1.0f / (float)(i + 1)
                                         : (pats[h] == SINK ? j == 0 : j == i);
    }
}

/* Runs the rare relation over one window and finishes it over H heads. */
static HeadsRelation rare_of(HeadStats *st, const Acts *f, int H, const int *x, const int *tg,
                             const uint64_t *counts, const float *losses, int T)
{
    HeadSums sums[4] = {0};
    RelationSums rs = {0};
    cr_assert_eq(heads_add_rare(sums, &rs, &f->a, x, tg, counts, losses, 1, T), 0);
    heads_finish(st, sums, H);
    HeadsRelation r;
    heads_relation_finish(&r, st, &rs, HEADS_REL_RARE, H);
    return r;
}

Test(heads_rare, counts_every_id_below_V)
{
    TokenId ids[] = {3, 1, 3, 0, 3, 7};
    uint64_t counts[4] = {9, 9, 9, 9};
    heads_token_counts(counts, ids, 6, 4);
    cr_assert_eq(counts[0], 1);
    cr_assert_eq(counts[1], 1);
    cr_assert_eq(counts[2], 0);
    cr_assert_eq(counts[3], 3, "id 7 >= V is not counted");
    cr_assert_str_eq(heads_rel_table[HEADS_REL_RARE].name, "rare");
    cr_assert_eq(HEADS_REL_RARE, HEADS_REL_TEXT - 1, "rare is a relation of any text");
}

Test(heads_rare, byte_level_key_sets_score_and_uniform_by_hand)
{
    /* Training text: a x7, b x5, c x3, d x1. Window "abcacbdc", T = 8, rows from 2. */
    enum { T = 8, H = 3 };
    const char *train = "aaaaaaabbbbbcccd", *text = "abcacbdc";
    TokenId tids[16];
    int x[T], tg[T];
    for (int t = 0; t < 16; t++)
        tids[t] = (unsigned char)train[t];
    uint64_t counts[256];
    heads_token_counts(counts, tids, 16, 256);
    cr_assert_eq(counts['a'], 7);
    cr_assert_eq(counts['d'], 1);
    for (int t = 0; t < T; t++) {
        x[t] = (unsigned char)text[t];
        tg[t] = t + 1 < T ? (unsigned char)text[t + 1] : 'a';
    }
    uint64_t minc[T];
    heads_rare_min(minc, x, counts, 1, T);
    /* Row i looks at j <= i - 2: the query and the previous token are not keys. */
    uint64_t want_min[T] = {UINT64_MAX, UINT64_MAX, 7, 5, 3, 3, 3, 3};
    int want_size[T] = {0, 0, 1, 1, 1, 1, 2, 2};
    for (int i = 0; i < T; i++) {
        cr_assert_eq(minc[i], want_min[i], "row %d", i);
        unsigned char in[T];
        cr_assert_eq(heads_rare_keys(in, x, i, T, counts, minc[i]), want_size[i], "row %d", i);
        if (i == 7)
            for (int j = 0; j < T; j++)
                cr_assert_eq(in[j], j == 2 || j == 4, "row 7 key %d: the two c's before 6", j);
    }
    /* Head 0 uniform, head 1 on position 0, head 2 self but for two rows. */
    int pats[H] = {UNIFORM, SINK, SELF};
    Acts f;
    acts_fake(&f, H, T, pats);
    float *att2 = (float *)heads_att(&f.a, 0, 0, 2, T);
    att2[6 * T + 6] = 0.25f;
    att2[6 * T + 2] = 0.5f;
    att2[6 * T + 4] = 0.25f;
    att2[7 * T + 7] = 0.0f;
    att2[7 * T + 6] = 1.0f;   /* d: rarer, but at i - 1 */
    float losses[T];
    for (int i = 0; i < T; i++)
        losses[i] = 0.25f * (float)i;
    HeadStats st[H] = {0};
    HeadsRelation r = rare_of(st, &f, H, x, tg, counts, losses, T);
    double uniform = (1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6 + 2.0 / 7 + 2.0 / 8) / 6;
    cr_assert_float_eq(r.rows, 6.0, 1e-12);
    cr_assert_float_eq(r.uniform, uniform, 1e-12);
    cr_assert_float_eq(st[0].rel[HEADS_REL_RARE], uniform, 1e-6, "a uniform head scores uniform");
    cr_assert_float_eq(st[1].rel[HEADS_REL_RARE], 1.0 / 6, 1e-7, "position 0 is R(2) only");
    cr_assert_float_eq(st[2].rel[HEADS_REL_RARE], 0.75 / 6, 1e-7);
    cr_assert_eq(r.best, 0);
    /* Loss: rows whose target is a token of R(i): row 2 (a -> a) and row 6 (c -> c). */
    cr_assert_float_eq(r.loss, (0.25 * 2 + 0.25 * 6) / 2, 1e-7);
    free(f.buf);
}

Test(heads_rare, byte_pair_windows_tie_every_rarest_token)
{
    /* Bytes ' ' a e h n t (ids 0..5); merges t+h -> "th" (6), th+e -> "the" (7),
     * ' '+the -> " the" (8), a+n -> "an" (9). */
    const unsigned char bytes[] = " aehnt";
    BpeMerge merges[] = {{5, 3}, {6, 2}, {0, 7}, {1, 4}};
    Tokenizer tok;
    char err[300];
    cr_assert_eq(tok_from_parts(&tok, bytes, 6, merges, 4, err, sizeof err), 0, "%s", err);
    const char *train = "the an the an the hat";
    TokenId ids[32];
    long n = tok_encode(&tok, (const unsigned char *)train, strlen(train), ids, "train", err,
                        sizeof err);
    int want_ids[] = {7, 0, 9, 8, 0, 9, 8, 0, 3, 1, 5};
    cr_assert_eq(n, 11, "%s", err);
    for (int t = 0; t < 11; t++)
        cr_assert_eq(ids[t], want_ids[t], "token %d", t);
    uint64_t counts[10];
    heads_token_counts(counts, ids, (size_t)n, tok.V);
    uint64_t want_counts[10] = {3, 1, 0, 1, 0, 1, 0, 1, 2, 2};
    for (int v = 0; v < 10; v++)
        cr_assert_eq(counts[v], want_counts[v], "id %d", v);
    /* Window "the an the hat an": 7 0 9 8 0 3 1 5 0 9; counts 1 3 2 2 3 1 1 1 3 2.
     * R(i) = the count-1 tokens at j <= i - 2: {0} for i = 2..6, then {0,5},
     * {0,5,6}, {0,5,6,7}. */
    enum { T = 10, H = 2 };
    const char *text = "the an the hat an";
    TokenId wid[32]; /* tok_encode needs room for one id per byte */
    cr_assert_eq(tok_encode(&tok, (const unsigned char *)text, strlen(text), wid, "text", err,
                            sizeof err), T);
    int x[T], tg[T];
    for (int t = 0; t < T; t++) {
        x[t] = wid[t];
        tg[t] = t + 1 < T ? wid[t + 1] : 0;
    }
    int want_size[T] = {0, 0, 1, 1, 1, 1, 1, 2, 3, 4};
    uint64_t minc[T];
    heads_rare_min(minc, x, counts, 1, T);
    for (int i = 0; i < T; i++)
        cr_assert_eq(heads_rare_keys(NULL, x, i, T, counts, minc[i]), want_size[i], "row %d", i);
    int pats[H] = {UNIFORM, SINK};
    Acts f;
    acts_fake(&f, H, T, pats);
    HeadStats st[H] = {0};
    HeadsRelation r = rare_of(st, &f, H, x, tg, counts, NULL, T);
    double uniform = (1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6 + 1.0 / 7 + 2.0 / 8 + 3.0 / 9 +
                      4.0 / 10) / 8;
    cr_assert_float_eq(r.uniform, uniform, 1e-12);
    cr_assert_float_eq(st[0].rel[HEADS_REL_RARE], uniform, 1e-6);
    cr_assert_float_eq(st[1].rel[HEADS_REL_RARE], 1.0, 1e-7, "\"the\" at 0 is in every R(i)");
    cr_assert_eq(r.best, 1);
    cr_assert_float_eq(r.loss, 0.0, 1e-12, "no losses given");
    free(f.buf);
    tok_free(&tok);
}

/* A training state naming path, with the size and hash of the file there now. */
static TrainState state_of(const char *path, double val_frac)
{
    TrainState ts;
    memset(&ts, 0, sizeof ts);
    char err[1500];
    TextFile f;
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    ts.data_size = f.n;
    ts.data_hash = f.hash;
    ts.val_frac = val_frac;
    snprintf(ts.data_path, sizeof ts.data_path, "%s", path);
    textfile_free(&f);
    return ts;
}

Test(heads_rare, counts_come_from_the_training_text_while_it_is_unchanged)
{
    const char *dir = tu_tmpdir("rare-counts");
    char path[512], why[2000];
    snprintf(path, sizeof path, "%s/train.txt", dir);
    /* Train split: the first 8 of 10 bytes, "aaaaaabb"; the val bytes are "cc". */
    cr_assert_eq(tu_write_file(path, "aaaaaabbcc", 10), 0);
    Tokenizer tok;
    cr_assert_eq(tok_build(&tok, (const unsigned char *)"abc", 3, NULL, 0), 0);
    TokenId file_ids[] = {2, 2, 1};   /* the analysed file: "ccb" */
    uint64_t counts[3];
    TrainState ts = state_of(path, 0.2);
    cr_assert_eq(rare_counts_load(counts, &ts, &tok, file_ids, 3, why, sizeof why), 1, "%s", why);
    cr_assert_eq(counts[0], 6);
    cr_assert_eq(counts[1], 2);
    cr_assert_eq(counts[2], 0, "the val split is not counted");
    cr_assert_not_null(strstr(why, "train split"), "%s", why);

    /* No training state, a changed file, a missing file: the analysed file's counts. */
    cr_assert_eq(rare_counts_load(counts, NULL, &tok, file_ids, 3, why, sizeof why), 0);
    cr_assert_not_null(strstr(why, "no training state"), "%s", why);
    cr_assert_eq(counts[2], 2);
    cr_assert_eq(counts[1], 1);
    cr_assert_eq(tu_write_file(path, "aaaaaabbcb", 10), 0);
    cr_assert_eq(rare_counts_load(counts, &ts, &tok, file_ids, 3, why, sizeof why), 0);
    cr_assert_not_null(strstr(why, "changed"), "%s", why);
    cr_assert_eq(tu_write_file(path, "aaaaaabbc", 9), 0);
    cr_assert_eq(rare_counts_load(counts, &ts, &tok, file_ids, 3, why, sizeof why), 0);
    cr_assert_not_null(strstr(why, "not the 10-byte file"), "%s", why);
    snprintf(ts.data_path, sizeof ts.data_path, "%s/gone.txt", dir);
    cr_assert_eq(rare_counts_load(counts, &ts, &tok, file_ids, 3, why, sizeof why), 0);
    cr_assert_not_null(strstr(why, "is not there"), "%s", why);
    cr_assert_eq(counts[2], 2);
    tok_free(&tok);
}

Test(heads_rare, the_built_in_corpus_is_generated_again)
{
    char err[300], why[2000];
    TextFile f;
    cr_assert_eq(textfile_builtin(&f, 5000, err, sizeof err), 0);
    Tokenizer tok;
    cr_assert_eq(tok_build(&tok, f.bytes, f.n, err, sizeof err), 0, "%s", err);
    TrainState ts;
    memset(&ts, 0, sizeof ts);
    snprintf(ts.data_path, sizeof ts.data_path, "%s", CORPUS_BUILTIN_NAME);
    ts.data_size = f.n;
    ts.data_hash = f.hash;
    ts.val_frac = 0.5;
    uint64_t *counts = calloc((size_t)tok.V, sizeof *counts), total = 0;
    TokenId one = 0;
    cr_assert_eq(rare_counts_load(counts, &ts, &tok, &one, 1, why, sizeof why), 1, "%s", why);
    for (int v = 0; v < tok.V; v++)
        total += counts[v];
    cr_assert_eq(total, 2500, "byte level: one token per train byte");
    ts.data_hash ^= 1;
    cr_assert_eq(rare_counts_load(counts, &ts, &tok, &one, 1, why, sizeof why), 0);
    cr_assert_eq(counts[0], 1);
    free(counts);
    tok_free(&tok);
    textfile_free(&f);
}
